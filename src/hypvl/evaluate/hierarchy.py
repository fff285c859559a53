"""An is-a hierarchy of class labels (a tree, or a DAG such as WordNet) for hierarchical metrics."""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable, Mapping

from hypvl.errors import InputError


class IsAHierarchy:
    """Labels linked child -> parents; `ancestors` and `distance` are cached per node."""

    def __init__(self, parents: Mapping[Hashable, Iterable[Hashable]], source: str = "<is-a hierarchy>"):
        """`parents[node]`: the node's direct parents (empty for the root); `source` names the input in errors."""
        self.source = source
        self._parents = {node: tuple(dict.fromkeys(ps)) for node, ps in parents.items()}
        for node, ps in list(self._parents.items()):
            for parent in ps:
                if parent == node:
                    raise InputError(f"{source}: node {node!r} is its own parent")
                self._parents.setdefault(parent, ())
        self._neighbours: dict[Hashable, set[Hashable]] = {node: set(ps) for node, ps in self._parents.items()}
        for node, ps in self._parents.items():
            for parent in ps:
                self._neighbours[parent].add(node)
        self._ancestors: dict[Hashable, frozenset] = {}
        self._distances: dict[Hashable, dict[Hashable, int]] = {}
        for node in self._parents:
            self.ancestors(node)

    @classmethod
    def from_parent_map(cls, parent_of: Mapping[Hashable, Hashable | None], source: str = "<parent map>"):
        """A tree from child -> parent (the root maps to None or is absent as a key)."""
        return cls({child: () if parent is None else (parent,) for child, parent in parent_of.items()}, source)

    @classmethod
    def from_edges(cls, edges: Iterable[tuple[Hashable, Hashable]], source: str = "<is-a edges>"):
        """A tree or DAG from (parent, child) pairs, e.g. the lines of ImageNet's `wordnet.is_a.txt`."""
        parents: dict[Hashable, list[Hashable]] = {}
        for parent, child in edges:
            parents.setdefault(child, []).append(parent)
            parents.setdefault(parent, [])
        return cls(parents, source)

    def __contains__(self, node: Hashable) -> bool:
        return node in self._parents

    def ancestors(self, node: Hashable) -> frozenset:
        """Strict ancestors of `node`: every node reachable by is-a edges upwards, the node itself excluded."""
        self._require(node)
        cached = self._ancestors.get(node)
        if cached is not None:
            return cached
        # Iterative post-order walk so deep WordNet chains never hit the recursion limit.
        stack, on_path = [(node, iter(self._parents[node]))], {node}
        while stack:
            current, pending = stack[-1]
            parent = next(pending, None)
            if parent is None:
                stack.pop()
                on_path.discard(current)
                found: set = set()
                for p in self._parents[current]:
                    found.add(p)
                    found |= self._ancestors[p]
                self._ancestors[current] = frozenset(found)
            elif parent in on_path:
                raise InputError(f"{self.source}: is-a cycle through {parent!r} and {current!r}")
            elif parent not in self._ancestors:
                on_path.add(parent)
                stack.append((parent, iter(self._parents[parent])))
        return self._ancestors[node]

    def distance(self, a: Hashable, b: Hashable) -> int:
        """Number of edges on the shortest path between `a` and `b`, edges taken as undirected."""
        self._require(b)
        distances = self._distances.get(a)
        if distances is None:
            self._require(a)
            distances, queue = {a: 0}, deque([a])
            while queue:
                current = queue.popleft()
                for neighbour in self._neighbours[current]:
                    if neighbour not in distances:
                        distances[neighbour] = distances[current] + 1
                        queue.append(neighbour)
            self._distances[a] = distances
        if b not in distances:
            raise InputError(f"{self.source}: no path between {a!r} and {b!r} (disconnected hierarchy)")
        return distances[b]

    def _require(self, node: Hashable) -> None:
        if node not in self._parents:
            raise InputError(f"{self.source}: unknown node {node!r}")
