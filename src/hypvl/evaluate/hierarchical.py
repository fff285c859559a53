"""Hierarchical classification on ImageNet (HyCoCLIP App. C, Table 2): TIE, LCA, Jaccard, hP, hR.

The zero-shot ImageNet predictions (argmax of the method's similarity, `zeroshot.dataset_scores`) are
scored on the WordNet is-a graph (`imagenet_isa.txt`). Class i is the node named by the i-th class
folder when the folders are WordNet ids (ImageNet's `val/<wnid>/` layout); otherwise (other folder names, or a
webdataset) its class name is looked up in `words.txt` beside the is-a file (`<wnid>\t<name>[, <synonym>...]`
per line, ImageNet's format), as in the smoke world.
"""

from pathlib import Path

from hypvl.data.formats.wordnet_isa import WNID, read_wordnet_isa
from hypvl.errors import InputError
from hypvl.evaluate.context import EvalContext, TaskResult
from hypvl.evaluate.hierarchy import IsAHierarchy
from hypvl.evaluate.metrics.hierarchical import (
    hierarchical_jaccard,
    hierarchical_precision,
    hierarchical_recall,
    lca_error,
    tree_induced_error,
)
from hypvl.evaluate.zeroshot import dataset_scores

WORDS_FILE = "words.txt"


def class_wnids(class_dirs: list[str] | None, class_names: list[str], isa_path: Path) -> list[str]:
    """The wnid of each class: the class-folder names if they are wnids, else each class name's entry in the
    `words.txt` beside `isa_path` (exactly one wnid must carry the name)."""
    if class_dirs and all(WNID.fullmatch(name) for name in class_dirs):
        return list(class_dirs)
    path = Path(isa_path).parent / WORDS_FILE
    if not path.is_file():
        raise InputError(f"{path}: missing; the ImageNet class folders are not wnids, so class names are "
                         "mapped to wnids through it")
    owners: dict[str, set[str]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not WNID.fullmatch(parts[0]):
            raise InputError(f"{path}: line {number}: should be '<wnid>\\t<name>', got {line!r}")
        for name in {parts[1].strip(), *(n.strip() for n in parts[1].split(","))}:
            owners.setdefault(name, set()).add(parts[0])
    wnids = []
    for name in class_names:
        found = owners.get(name, set())
        if len(found) != 1:
            raise InputError(f"{path}: class name {name!r} names {len(found)} wnids ({sorted(found)[:3]}), need one")
        wnids.append(found.pop())
    return wnids


def hierarchical_metrics(scores, target, hierarchy: IsAHierarchy, nodes: list[str]) -> dict[str, float]:
    """TIE and LCA in edges, Jaccard, hP and hR as fractions (HyCoCLIP Eq. 13)."""
    missing = [node for node in nodes if node not in hierarchy]
    if missing:
        raise InputError(f"{hierarchy.source}: classes {missing[:3]} are not in the is-a graph")
    pred = scores.argmax(dim=1)
    return {"tie": tree_induced_error(pred, target, hierarchy, nodes),
            "lca": lca_error(pred, target, hierarchy, nodes),
            "jaccard": hierarchical_jaccard(pred, target, hierarchy, nodes),
            "h_precision": hierarchical_precision(pred, target, hierarchy, nodes),
            "h_recall": hierarchical_recall(pred, target, hierarchy, nodes)}


def run(ctx: EvalContext, task: str) -> TaskResult:
    """Task `hier_imagenet`."""
    path = ctx.dataset_path("imagenet_isa")
    hierarchy = IsAHierarchy.from_edges(read_wordnet_isa(path), str(path))
    result = dataset_scores(ctx, "imagenet")
    nodes = class_wnids(result.class_dirs, result.class_names, path)
    return TaskResult(hierarchical_metrics(result.scores, result.target, hierarchy, nodes), len(result.target))
