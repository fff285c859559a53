"""Scene understanding: VL-CheckList (image-text contrast) and ARO's VG-Attribution.

VL-CheckList (Zhao et al. 2022; HyCoCLIP Table 5, syntax-preserving VSE Table 3): every corpus YAML
under `<root>/corpus/<version>/<Type>/<group...>/<file>.yaml` names an annotation file; an item is
correct when the image scores its first positive caption strictly above its first negative (ITC, ties
wrong). As upstream (`MAX_NUM: 2000`, `MAX_NUM/2` per corpus), at most 1000 items per corpus file are
used. Aggregation as upstream's `radar.py` with `corpus.json`: accuracy per corpus file; a group (e.g.
Object/Location/center) = mean over its sources (vg, swig, hake, vaw: the file name up to its first `_`)
of the mean over that source's files (`vg_obj`, `vg_subj`); a category (Location) = mean over its groups;
the task's `accuracy` = mean over categories (HyCoCLIP's VL-CheckList-Object = mean of Size and
Location). Group metrics are named by the lower-cased folders below the Type, joined by `_`
(`location_center`, `size_small`, `color`). A missing image is an error; with config
`hypvl evaluate scene --vlchecklist-skip-missing` (config `eval.vlchecklist_skip_missing`), items whose
image is missing are dropped before the first 1000 are taken, as upstream's loader does, and
`skipped_images` counts them.

VG-Attribution (Yuksekgonul et al. 2023): the image is cropped to the record's box; correct when the
true caption scores strictly above the attribute-swapped one; macro accuracy over attribute pairs
with at least `min_count` samples (ARO: 25).
"""

import logging
import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import torch

from hypvl.data.formats.imagefolder import load_image
from hypvl.errors import InputError
from hypvl.evaluate.context import EvalContext, TaskResult
from hypvl.evaluate.features import image_embeddings, text_embeddings
from hypvl.evaluate.metrics.checks import check_finite
from hypvl.evaluate.metrics.compositional import itc_accuracy, vg_attribution_macro_accuracy

log = logging.getLogger(__name__)
ITEMS_PER_CORPUS = 1000
VLC_TYPES = {"vlc_object": "Object", "vlc_attribute": "Attribute", "vlc_relation": "Relation"}


@torch.no_grad()
def paired_scores(model, images: torch.Tensor, texts: torch.Tensor, batch_size: int) -> torch.Tensor:
    """(N,) similarity of images[i] with texts[i], the method's own score, computed block-diagonally."""
    scores = [model.similarity(images[i:i + batch_size], texts[i:i + batch_size]).diagonal()
              for i in range(0, len(images), batch_size)]
    out = torch.cat(scores)
    check_finite("paired scores", out)
    return out


def contrast_scores(ctx: EvalContext, load, count: int, positives: Sequence[str], negatives: Sequence[str],
                    name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(N,) scores of each image (its centre-crop view) with its positive and with its negative caption."""
    images = image_embeddings(ctx.model, load, count, lambda img: ctx.model.eval_view(img, ctx.image_size, "crop"),
                              ctx.batch_size, name)
    texts = text_embeddings(ctx.model, ctx.tokenizer, [*positives, *negatives], ctx.batch_size, name)
    return (paired_scores(ctx.model, images, texts[:count], ctx.batch_size),
            paired_scores(ctx.model, images, texts[count:], ctx.batch_size))


def checklist_corpora(root: Path, type_name: str) -> dict[tuple[str, ...], list[Path]]:
    """Corpus YAMLs of `type_name` grouped by their folders below the Type (lower-cased), sorted."""
    corpus_dir = Path(root) / "corpus"
    found: dict[tuple[str, ...], list[Path]] = defaultdict(list)
    for path in sorted(corpus_dir.glob(f"*/{type_name}/**/*.yaml")):
        group = tuple(part.lower() for part in path.relative_to(corpus_dir).parts[2:-1])
        if not group:
            raise InputError(f"{path}: a corpus YAML must sit in a group folder below {type_name}/")
        found[group].append(path)
    if not found:
        raise InputError(f"{corpus_dir}: no corpus YAMLs under <version>/{type_name}/")
    return dict(found)


def source_of(path: Path) -> str:
    """Upstream's source of a corpus file (`corpus.json`): its name up to the first `_` (vg_obj -> vg)."""
    return path.stem.split("_")[0]


def source_weighted_mean(accuracies: dict[Path, float]) -> float:
    """Mean over sources of the mean accuracy of each source's files (VL-CheckList's `radar.py`)."""
    by_source: dict[str, list[float]] = defaultdict(list)
    for path, accuracy in accuracies.items():
        by_source[source_of(path)].append(accuracy)
    return sum(sum(values) / len(values) for values in by_source.values()) / len(by_source)


def checklist_items(path: Path, root: Path, skip_missing: bool) -> tuple[list, int]:
    """Items of one corpus file and how many were dropped for a missing image (always 0 unless `skip_missing`)."""
    from hypvl.data.formats.vlchecklist import read_vlchecklist_corpus

    _, items = read_vlchecklist_corpus(path, root, check_images=not skip_missing)
    kept = [item for item in items if not skip_missing or Path(item.image).is_file()]
    return kept, len(items) - len(kept)


def evaluate_checklist(ctx: EvalContext, root: Path, type_name: str, name: str,
                       items_per_corpus: int = ITEMS_PER_CORPUS, skip_missing: bool = False) -> TaskResult:
    """`accuracy`, one metric per category and per group (percent) for one VL-CheckList Type
    (+ `skipped_images` when `skip_missing`)."""
    group_accuracy, total, skipped = {}, 0, 0
    for group, paths in checklist_corpora(root, type_name).items():
        per_file = {}
        for path in paths:
            items, dropped = checklist_items(path, root, skip_missing)
            skipped += dropped
            items = items[:items_per_corpus]
            if not items:
                raise InputError(f"{path}: the annotation file it names holds no items"
                                 + (f" whose image exists ({dropped} missing)" if dropped else ""))
            pos, neg = contrast_scores(
                ctx, lambda i: load_image(items[i].image), len(items), [it.positives[0] for it in items],
                [it.negatives[0] for it in items], f"{name} {path.name}")
            per_file[path] = itc_accuracy(pos, neg)
            total += len(items)
        group_accuracy[group] = source_weighted_mean(per_file)
    categories: dict[str, list[float]] = defaultdict(list)
    for group, accuracy in group_accuracy.items():
        categories[group[0]].append(accuracy)
    category_accuracy = {category: sum(values) / len(values) for category, values in categories.items()}
    metrics = {"accuracy": sum(category_accuracy.values()) / len(category_accuracy)}
    metrics |= {category: value for category, value in category_accuracy.items() if (category,) not in group_accuracy}
    metrics |= {"_".join(group): value for group, value in group_accuracy.items()}
    if skip_missing:
        log.info("%s: skipped %d item(s) whose image is missing", name, skipped)
        metrics["skipped_images"] = float(skipped)
    return TaskResult(metrics, total)


def crop_box(image, box: tuple[float, float, float, float]):
    """The (x, y, w, h) pixel box of `image` (outward to whole pixels, clipped, at least 1 px)."""
    x, y, w, h = box
    left = min(max(0, math.floor(x)), image.width - 1)
    top = min(max(0, math.floor(y)), image.height - 1)
    right = max(left + 1, min(image.width, math.ceil(x + w)))
    bottom = max(top + 1, min(image.height, math.ceil(y + h)))
    return image.crop((left, top, right, bottom))


def evaluate_vg_attribution(ctx: EvalContext, path: Path, min_count: int, name: str = "vg_attribution") -> TaskResult:
    """Macro accuracy (percent) over attribute pairs with >= `min_count` samples."""
    from hypvl.data.formats.vg_attribution import read_vg_attribution

    items = read_vg_attribution(path)
    if not items:
        raise InputError(f"{path}: no records")
    true, false = contrast_scores(
        ctx, lambda i: crop_box(load_image(items[i].image), items[i].bbox), len(items),
        [it.true_caption for it in items], [it.false_caption for it in items], name)
    pairs = [f"{it.attributes[0]}_{it.attributes[1]}" for it in items]
    accuracy = vg_attribution_macro_accuracy(true > false, pairs, min_count)
    return TaskResult({"accuracy": accuracy}, len(items))


def run(ctx: EvalContext, task: str) -> TaskResult:
    """Tasks `vlc_object`, `vlc_attribute`, `vlc_relation`, `vg_attribution`."""
    if task == "vg_attribution":
        return evaluate_vg_attribution(ctx, ctx.dataset_path("vg_attribution"),
                                       ctx.config["eval"]["vg_attribution_min_count"])
    return evaluate_checklist(ctx, ctx.dataset_path("vlchecklist"), VLC_TYPES[task], task,
                              skip_missing=ctx.config["eval"].get("vlchecklist_skip_missing", False))
