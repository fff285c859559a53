"""BREEDS (Santurkar et al., ICLR 2021): the ImageNet class hierarchy and superclass splits.

Hierarchy: the `info_dir` of the robustness library (`robustness.tools.breeds_helpers`, files from
MadryLab/BREEDS-Benchmarks `imagenet_class_hierarchy/modified/`):
- `dataset_class_info.json`: a list of `[class number, wnid, class name]`, one per ImageNet class;
- `class_hierarchy.txt`: one `<parent wnid> <child wnid>` edge per line (whitespace-separated);
- `node_names.txt`: `<wnid>\\t<name>` per line.
Superclass split (our JSON, the robustness library's return value of `make_entity13`,
`make_living17`, ... and `BreedsDatasetGenerator.get_superclasses` written out):
`{"superclasses": [wnid, ...], "label_map": {"0": name, ...},
  "subclass_split": [[[class numbers of superclass 0], ...], [[...], ...]]}`
where `subclass_split[0]` lists the source-domain classes and `subclass_split[1]` the target-domain
classes of each superclass (empty list when the dataset is not split).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hypvl.io import atomic_write

from .common import Where, check_kind, field, load_json, read_text, write_json
from .wordnet_isa import WNID, IsaEdge, check_acyclic, parse_edge_lines

CLASS_INFO = "dataset_class_info.json"
HIERARCHY = "class_hierarchy.txt"
NODE_NAMES = "node_names.txt"


@dataclass(frozen=True)
class BreedsClass:
    """A leaf (dataset) class: its number, wnid and name."""

    index: int
    wnid: str
    name: str


@dataclass(frozen=True)
class BreedsHierarchy:
    """Leaf classes (file order), is-a edges (file order) and node names."""

    classes: tuple[BreedsClass, ...]
    edges: tuple[IsaEdge, ...]
    node_names: dict[str, str]


@dataclass(frozen=True)
class BreedsSuperclass:
    """One superclass of a split: its label, wnid, name, source-domain and target-domain class numbers."""

    label: int
    wnid: str
    name: str
    source: tuple[int, ...]
    target: tuple[int, ...]


def read_breeds_hierarchy(info_dir: Path) -> BreedsHierarchy:
    """The three hierarchy files of `info_dir`, validated (unique class numbers and wnids, a DAG)."""
    info_dir = Path(info_dir)
    path = info_dir / CLASS_INFO
    data = load_json(path)
    check_kind(data, list, "the top level", Where(path))
    classes, numbers, wnids = [], set(), set()
    for index, entry in enumerate(data):
        where = Where(path, index)
        check_kind(entry, list, "the record", where)
        if len(entry) != 3:
            raise where.error(f"should be [class number, wnid, name], got {len(entry)} elements")
        item = BreedsClass(
            check_kind(entry[0], int, "class number", where),
            check_kind(entry[1], str, "wnid", where),
            check_kind(entry[2], str, "name", where),
        )
        if not WNID.fullmatch(item.wnid):
            raise where.error(f"'{item.wnid}' is not a wnid (n + 8 digits)")
        if item.index in numbers or item.wnid in wnids:
            raise where.error(f"class number {item.index} or wnid {item.wnid} repeats")
        numbers.add(item.index)
        wnids.add(item.wnid)
        classes.append(item)
    hierarchy_path = info_dir / HIERARCHY
    edges = parse_edge_lines(hierarchy_path, read_text(hierarchy_path), None)
    check_acyclic(edges)
    names_path = info_dir / NODE_NAMES
    names = {}
    for number, line in enumerate(read_text(names_path).splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 2 or not WNID.fullmatch(parts[0]):
            raise Where(names_path, f"line {number}").error(f"should be '<wnid>\\t<name>', got '{line}'")
        names[parts[0]] = parts[1]
    return BreedsHierarchy(tuple(classes), tuple(edge for _, edge in edges), names)


def write_breeds_hierarchy(info_dir: Path, hierarchy: BreedsHierarchy) -> None:
    """Write the three hierarchy files into `info_dir`."""
    info_dir = Path(info_dir)
    write_json(info_dir / CLASS_INFO, [[c.index, c.wnid, c.name] for c in hierarchy.classes])
    for name, lines in (
        (HIERARCHY, [f"{e.parent} {e.child}" for e in hierarchy.edges]),
        (NODE_NAMES, [f"{wnid}\t{label}" for wnid, label in hierarchy.node_names.items()]),
    ):
        with atomic_write(info_dir / name, mode="w", encoding="utf-8") as handle:
            handle.write("".join(f"{line}\n" for line in lines))


def _class_lists(value, count: int, what: str, where: Where) -> list[tuple[int, ...]]:
    """`count` lists of class numbers."""
    check_kind(value, list, what, where)
    if len(value) != count:
        raise where.error(f"{what} should hold {count} lists (one per superclass), got {len(value)}")
    lists = []
    for i, classes in enumerate(value):
        check_kind(classes, list, f"{what}[{i}]", where)
        lists.append(tuple(check_kind(n, int, f"{what}[{i}][{j}]", where) for j, n in enumerate(classes)))
    return lists


def read_breeds_split(path: Path, hierarchy: BreedsHierarchy | None = None) -> list[BreedsSuperclass]:
    """Superclasses of a split JSON in label order; class numbers are checked against `hierarchy` if given."""
    path = Path(path)
    data = load_json(path)
    top = Where(path)
    wnids = field(data, "superclasses", list, top)
    superclasses = [check_kind(wnid, str, f"superclasses[{i}]", top) for i, wnid in enumerate(wnids)]
    label_map = field(data, "label_map", dict, top)
    if sorted(label_map) != sorted(str(i) for i in range(len(superclasses))):
        raise top.error(f"label_map keys should be '0'..'{len(superclasses) - 1}', got {sorted(label_map)}")
    split = field(data, "subclass_split", list, top)
    if len(split) != 2:
        raise top.error(f"subclass_split should be [source lists, target lists], got {len(split)} elements")
    count = len(superclasses)
    source = _class_lists(split[0], count, "subclass_split[0]", top)
    target = _class_lists(split[1], count, "subclass_split[1]", top) if split[1] else [()] * count
    known = None if hierarchy is None else {c.index for c in hierarchy.classes}
    records = []
    for label, wnid in enumerate(superclasses):
        where = top.at(f"superclass {label}")
        if not WNID.fullmatch(wnid):
            raise where.error(f"'{wnid}' is not a wnid (n + 8 digits)")
        if set(source[label]) & set(target[label]):
            raise where.error(f"source and target share classes {sorted(set(source[label]) & set(target[label]))}")
        unknown = [] if known is None else sorted(set(source[label] + target[label]) - known)
        if unknown:
            raise where.error(f"class numbers {unknown} are not in the hierarchy")
        name = check_kind(label_map[str(label)], str, f"label_map['{label}']", where)
        records.append(BreedsSuperclass(label, wnid, name, source[label], target[label]))
    return records


def write_breeds_split(path: Path, superclasses: Sequence[BreedsSuperclass]) -> None:
    """Write a split JSON; the target lists are written empty when every superclass has none."""
    targets = [list(s.target) for s in superclasses]
    write_json(
        path,
        {
            "superclasses": [s.wnid for s in superclasses],
            "label_map": {str(i): s.name for i, s in enumerate(superclasses)},
            "subclass_split": [[list(s.source) for s in superclasses], targets if any(targets) else []],
        },
    )
