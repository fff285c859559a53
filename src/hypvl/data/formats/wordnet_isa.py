"""ImageNet WordNet is-a edges, HyCoCLIP's `assets/imagenet_synset/imagenet_isa.txt`.

One edge per line: `<parent wnid> <child wnid>`, space-separated (HyCoCLIP reads it with
`csv.reader(delimiter=" ")` into a networkx DiGraph; 1,371 lines). A wnid is `n` plus eight digits
(a WordNet noun offset). Blank lines are ignored; self-loops and cycles are errors (the graph
must be a DAG; a node may have several parents).
"""

import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from hypvl.io import atomic_write

from .common import Where, read_text

WNID = re.compile(r"n\d{8}")


class IsaEdge(NamedTuple):
    """`child` is-a `parent` (both wnids)."""

    parent: str
    child: str


def parse_edge_lines(path: Path, text: str, separator: str | None) -> list[tuple[Where, IsaEdge]]:
    """Edges of a 'parent<sep>child' file (None: any whitespace) with their line locations."""
    edges = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = Where(path, f"line {number}")
        parts = line.strip().split(separator)
        if len(parts) != 2:
            raise where.error(f"should be '<parent wnid> <child wnid>', got {len(parts)} fields: '{line}'")
        for wnid in parts:
            if not WNID.fullmatch(wnid):
                raise where.error(f"'{wnid}' is not a wnid (n + 8 digits)")
        if parts[0] == parts[1]:
            raise where.error(f"self-loop on {parts[0]}")
        edges.append((where, IsaEdge(*parts)))
    return edges


def check_acyclic(edges: Sequence[tuple[Where, IsaEdge]]) -> None:
    """Raise naming the first line on or below a cycle if the edges are not a DAG (Kahn's algorithm)."""
    children: dict[str, list[str]] = {}
    indegree: dict[str, int] = {}
    for _, edge in edges:
        children.setdefault(edge.parent, []).append(edge.child)
        indegree[edge.child] = indegree.get(edge.child, 0) + 1
        indegree.setdefault(edge.parent, 0)
    ready = [node for node, count in indegree.items() if count == 0]
    while ready:
        node = ready.pop()
        for child in children.get(node, ()):
            indegree[child] -= 1
            if indegree[child] == 0:
                ready.append(child)
    for where, edge in edges:
        if indegree[edge.child] > 0 and indegree[edge.parent] > 0:
            raise where.error(f"edge {edge.parent} -> {edge.child} lies on or below a cycle")


def read_wordnet_isa(path: Path) -> list[IsaEdge]:
    """Edges in file order."""
    path = Path(path)
    edges = parse_edge_lines(path, read_text(path), " ")
    check_acyclic(edges)
    return [edge for _, edge in edges]


def write_wordnet_isa(path: Path, edges: Sequence[IsaEdge]) -> None:
    """Write one 'parent child' line per edge."""
    with atomic_write(path, mode="w", encoding="utf-8") as handle:
        handle.write("".join(f"{parent} {child}\n" for parent, child in edges))
