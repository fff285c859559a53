"""The smoke world's class hierarchies: the WordNet-like is-a file over its concepts and a BREEDS-like hierarchy
over the smoke ImageNet's classes with two superclass splits."""

from pathlib import Path

from hypvl.data.formats.breeds import (
    BreedsClass,
    BreedsHierarchy,
    BreedsSuperclass,
    write_breeds_hierarchy,
    write_breeds_split,
)
from hypvl.data.formats.wordnet_isa import IsaEdge, write_wordnet_isa
from hypvl.io import atomic_write

from .world import TAXONOMY, hierarchy_nodes, isa_edges, leaf_concepts, wnid


def write_wordnet(path: Path) -> dict:
    """The is-a edges as `<parent wnid> <child wnid>` lines, plus `words.txt` (`wnid<TAB>name`)."""
    edges = [IsaEdge(wnid(parent), wnid(child)) for child, parent in isa_edges()]
    write_wordnet_isa(path, edges)
    with atomic_write(Path(path).parent / "words.txt", mode="w", encoding="utf-8") as handle:
        handle.write("".join(f"{wnid(node)}\t{node}\n" for node in hierarchy_nodes()))
    return {"edges": len(edges), "nodes": len(hierarchy_nodes())}


def write_breeds_sets(folder: Path, imagenet_classes: tuple[str, ...]) -> dict:
    """BREEDS-like info dir (classes = the smoke ImageNet's leaves in class order, the world's is-a
    edges, node names) and two superclass splits: `basic7.json` (basic-level superclasses, first
    two leaves source, last two target) and `superordinate4.json` (leaves alternating source/target)."""
    folder = Path(folder)
    classes = tuple(BreedsClass(i, wnid(name), name) for i, name in enumerate(imagenet_classes))
    edges = tuple(IsaEdge(wnid(parent), wnid(child)) for child, parent in isa_edges())
    write_breeds_hierarchy(folder, BreedsHierarchy(classes, edges, {wnid(n): n for n in hierarchy_nodes()}))
    number = {name: i for i, name in enumerate(imagenet_classes)}
    leaves = leaf_concepts()
    splits = {
        "basic7.json": [(basic, [number[c.name] for c in leaves if c.basic == basic])
                        for sup in TAXONOMY for basic in TAXONOMY[sup]],
        "superordinate4.json": [(sup, [number[c.name] for c in leaves if c.superordinate == sup])
                                for sup in TAXONOMY],
    }
    for name, groups in splits.items():
        if name == "basic7.json":
            cut = [(members[:2], members[2:]) for _, members in groups]
        else:
            cut = [(members[::2], members[1::2]) for _, members in groups]
        write_breeds_split(folder / name, [BreedsSuperclass(label, wnid(node), node, tuple(src), tuple(tgt))
                                           for label, ((node, _), (src, tgt)) in enumerate(zip(groups, cut))])
    return {"classes": len(classes), "splits": sorted(splits)}
