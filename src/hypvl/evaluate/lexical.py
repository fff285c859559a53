"""HyperLex and BREEDS as the HierarCaps paper probes them (Sec. 6.1, App. B.6; Tables 1, 3, 6, 7).

HyperLex: each word is embedded in the prompt "a picture of a {}"; for a pair (word1, word2), rated
"to what degree is word1 a type of word2", word2 is the general item and the predicted score is
-Xi_r(e_word2, e_word1) (a small exterior angle means entailment, so it is negated for a positive
correlation; the paper does not print the sign). `rho_all`, `rho_n`: Spearman rho with AVG_SCORE over
all pairs and over nouns.

BREEDS: for each superclass split (`<root>/<subset>.json`, e.g. living17, nonliving26, entity13,
entity30) the candidate labels are its superclass names and its subclass names; a test item is an
ImageNet image of one of its subclasses (the classification set `imagenet`, labels = BREEDS class
numbers), whose truth is the ordered pair (superclass, subclass). Each label is embedded with the
catalog's ImageNet prompt ensemble; c_x is the method's image-label similarity. Candidates are all
ordered pairs of distinct labels (x, y) with x closer to the root; a pair scores
c_x + c_y - C * Xi_r(x, y). The paper prints "+ C Xi" with C in [0, 0.2], which would reward pairs
that are *not* entailed; the minus sign is our reading. C is chosen among 20 equally spaced values
in [0, 0.2] by 2-fold cross-validation (folds: first and second half of the items), separately for
R@1 and R@5, and the two folds' held-out recalls are averaged. `r1`, `r5`: fractions, the mean over
subsets (the paper does not say how subsets are combined); `<subset>_r1`, `<subset>_r5` per subset.
"""

from pathlib import Path

import numpy as np
import torch

from hypvl.data.formats.imagefolder import load_image, read_imagefolder
from hypvl.data.transforms import resize_center_crop
from hypvl.errors import InputError
from hypvl.evaluate.context import EvalContext, TaskResult
from hypvl.evaluate.features import image_embeddings, text_embeddings
from hypvl.evaluate.metrics import check_finite, spearman_rho
from hypvl.evaluate.radial import entailment_root, exterior_angles, pairwise_exterior_angles, radii
from hypvl.evaluate.zeroshot import class_embeddings

HYPERLEX_PROMPT = "a picture of a {}"
BREEDS_COSTS = tuple(np.linspace(0.0, 0.2, 20).tolist())
BREEDS_KS = (1, 5)


@torch.no_grad()
def evaluate_hyperlex(ctx: EvalContext, path: Path) -> TaskResult:
    """rho_all and rho_n; n_samples = pairs."""
    from hypvl.data.formats.hyperlex import read_hyperlex

    pairs = read_hyperlex(path)
    if not pairs:
        raise InputError(f"{path}: no pairs")
    words = list(dict.fromkeys(w for p in pairs for w in (p.word1, p.word2)))
    index = {w: i for i, w in enumerate(words)}
    embeds = text_embeddings(ctx.model, ctx.tokenizer, [HYPERLEX_PROMPT.format(w) for w in words],
                             ctx.batch_size, "hyperlex")
    root = entailment_root(ctx.model, ctx.tokenizer)
    general = embeds[[index[p.word2] for p in pairs]]
    specific = embeds[[index[p.word1] for p in pairs]]
    predicted = -exterior_angles(ctx.model, general, specific, root)
    truth = torch.tensor([p.score for p in pairs], dtype=torch.float64)
    nouns = torch.tensor([p.pos == "N" for p in pairs])
    if not nouns.any():
        raise InputError(f"{path}: no noun pairs for rho_N")
    metrics = {"rho_all": spearman_rho(predicted, truth), "rho_n": spearman_rho(predicted[nouns], truth[nouns])}
    return TaskResult(metrics, len(pairs))


def pair_hits(image_label_scores: torch.Tensor, angles: torch.Tensor, general: torch.Tensor,
              specific: torch.Tensor, truth: torch.Tensor, cost: float, ks=BREEDS_KS) -> dict[int, torch.Tensor]:
    """(N,) bool per k: the true pair is among the k best candidate pairs of each image.

    image_label_scores: (N, L) c; angles: (L, L) Xi_r(x, y); general, specific: (P,) label indices of the
    candidate pairs; truth: (N,) index of each image's true pair among the candidates, -1 when it is
    not a candidate. A pair scoring equal to the true one counts ahead of it (pessimistic ties).
    """
    scores = image_label_scores[:, general] + image_label_scores[:, specific] - cost * angles[general, specific]
    found = truth >= 0
    true_scores = scores.gather(1, truth.clamp(min=0)[:, None])
    ahead = (scores >= true_scores).sum(dim=1) - 1
    return {k: found & (ahead < k) for k in ks}


def cross_validated_recall(image_label_scores, angles, general, specific, truth,
                           costs=BREEDS_COSTS, ks=BREEDS_KS) -> dict[int, float]:
    """Recall@k as a fraction: C picked on one half of the items, scored on the other, both ways, averaged."""
    half = len(truth) // 2
    folds = (torch.arange(half), torch.arange(half, len(truth)))
    if half == 0:
        raise ValueError("BREEDS cross-validation needs at least two items")
    per_cost = [pair_hits(image_label_scores, angles, general, specific, truth, c, ks) for c in costs]
    result = {}
    for k in ks:
        held_out = []
        for fit, test in (folds, folds[::-1]):
            best = max(range(len(costs)), key=lambda i: (per_cost[i][k][fit].double().mean().item(), -i))
            held_out.append(per_cost[best][k][test].double().mean().item())
        result[k] = sum(held_out) / 2
    return result


@torch.no_grad()
def evaluate_breeds_subset(ctx: EvalContext, split_path: Path, hierarchy, images: torch.Tensor,
                           labels: torch.Tensor, templates: list[str]) -> tuple[dict[int, float], int]:
    """Cross-validated R@1/R@5 on one superclass split; `images`/`labels` cover the ImageNet test set."""
    from hypvl.data.formats.breeds import read_breeds_split

    superclasses = read_breeds_split(split_path, hierarchy)
    class_names = {c.index: c.name for c in hierarchy.classes}
    coarse_of = {n: s.label for s in superclasses for n in (*s.source, *s.target)}
    names = list(dict.fromkeys([s.name for s in superclasses] + [class_names[n] for n in sorted(coarse_of)]))
    label_index = {name: i for i, name in enumerate(names)}
    keep = torch.tensor([int(label) in coarse_of for label in labels.tolist()], dtype=torch.bool)
    if not keep.any():
        raise InputError(f"{split_path}: no ImageNet test image belongs to its classes")
    model, root = ctx.model, entailment_root(ctx.model, ctx.tokenizer)
    label_embeds = class_embeddings(model, ctx.tokenizer, names, templates, ctx.batch_size, split_path.stem)
    scores = model.similarity(images[keep], label_embeds)
    check_finite(f"{split_path.stem} image-label scores", scores)
    label_radii = radii(model, label_embeds, root)
    angles = pairwise_exterior_angles(model, label_embeds, label_embeds, root)
    general, specific = (label_radii[:, None] < label_radii[None, :]).nonzero(as_tuple=True)
    pair_index = {(g, s): i for i, (g, s) in enumerate(zip(general.tolist(), specific.tolist()))}
    truth = torch.tensor([
        pair_index.get((label_index[superclasses[coarse_of[n]].name], label_index[class_names[n]]), -1)
        for n in labels[keep].tolist()])
    return cross_validated_recall(scores, angles, general, specific, truth), int(keep.sum())


def evaluate_breeds(ctx: EvalContext, root: Path, templates: list[str]) -> TaskResult:
    """r1, r5 (mean over subsets) and per-subset recalls; n_samples = items summed over subsets."""
    from hypvl.data.formats.breeds import CLASS_INFO, read_breeds_hierarchy

    hierarchy = read_breeds_hierarchy(root)
    splits = sorted(p for p in Path(root).glob("*.json") if p.name != CLASS_INFO)
    if not splits:
        raise InputError(f"{root}: no superclass split JSONs next to {CLASS_INFO}")
    dataset = read_imagefolder(ctx.classification_root("imagenet"), ctx.config["eval"]["classification_split"])
    images = image_embeddings(ctx.model, lambda i: load_image(dataset.samples[i][0]), len(dataset.samples),
                              lambda img: resize_center_crop(img, ctx.image_size), ctx.batch_size, "breeds")
    labels = torch.tensor([label for _, label in dataset.samples])
    metrics, total = {}, 0
    for path in splits:
        recall, count = evaluate_breeds_subset(ctx, path, hierarchy, images, labels, templates)
        metrics |= {f"{path.stem}_r{k}": recall[k] for k in BREEDS_KS}
        total += count
    for k in BREEDS_KS:
        metrics[f"r{k}"] = sum(metrics[f"{p.stem}_r{k}"] for p in splits) / len(splits)
    return TaskResult(metrics, total)


def run(ctx: EvalContext, task: str) -> TaskResult:
    """Tasks `hyperlex` and `breeds`."""
    if task == "hyperlex":
        return evaluate_hyperlex(ctx, ctx.dataset_path("hyperlex"))
    return evaluate_breeds(ctx, ctx.dataset_path("breeds"), ctx.templates("imagenet"))
