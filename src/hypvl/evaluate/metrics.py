"""Evaluation metrics: pure functions of tensors (numpy accepted), each checked in tests against an oracle.

Units: accuracies, recalls and AP in percent (0-100); hierarchical set metrics (HyCoCLIP Table 2) and
HierarCaps precision/recall as fractions (0-1); TIE and LCA in edges; Kendall tau in [-1, 1] -- each as
the papers print them.

scipy, scikit-learn and pycocotools are imported inside the functions that use them: every evaluation
process imports this module, most use none of them, and together they cost seconds of start-up.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from hypvl.errors import InputError, require
from hypvl.evaluate.hierarchy import IsAHierarchy


class NonFiniteEmbeddingError(InputError):
    """Embeddings or scores handed to a metric contain NaN or Inf (an InputError, so `hypvl` reports it as
    one line: the checkpoint under evaluation is unusable)."""


def check_finite(name: str, tensor: torch.Tensor | np.ndarray) -> None:
    """Raise NonFiniteEmbeddingError naming `name`, the count and first row of non-finite entries."""
    tensor = torch.as_tensor(tensor)
    if not tensor.is_floating_point():
        return
    bad = ~torch.isfinite(tensor)
    if bad.any():
        rows = bad.reshape(bad.shape[0], -1).any(dim=1) if bad.ndim > 0 else bad.reshape(1)
        first = int(rows.nonzero()[0, 0])
        raise NonFiniteEmbeddingError(
            f"{name}: {int(bad.sum())} NaN/Inf value(s) in {int(rows.sum())} row(s) of shape "
            f"{tuple(tensor.shape)}, first at row {first}"
        )


def _labels(pred: torch.Tensor | np.ndarray) -> torch.Tensor:
    """(N,) class indices from (N,) indices or (N, C) scores (argmax)."""
    pred = torch.as_tensor(pred)
    if pred.ndim == 2:
        check_finite("scores", pred)
        return pred.argmax(dim=1)
    return pred.long()


def top1_accuracy(pred: torch.Tensor | np.ndarray, target: torch.Tensor | np.ndarray) -> float:
    """Percent of samples whose prediction equals the target; pred: (N,) indices or (N, C) scores, target: (N,)."""
    pred, target = _labels(pred), torch.as_tensor(target).long()
    _same_length(pred, target)
    return 100.0 * (pred == target).double().mean().item()


def mean_per_class_accuracy(
    pred: torch.Tensor | np.ndarray,
    target: torch.Tensor | np.ndarray,
    num_classes: int,
    count_absent_predicted: bool = False,
) -> float:
    """Macro-averaged per-class recall in percent; pred: (N,) indices or (N, C) scores, target: (N,).

    Classes absent from `target` are excluded (sklearn `balanced_accuracy_score`). torchmetrics'
    `MulticlassAccuracy(average="macro")`, which MERU and HyCoCLIP use, excludes only classes with no
    true positive, false positive or false negative: a class absent from `target` but predicted counts
    with accuracy 0. `count_absent_predicted=True` reproduces that. On full test sets, where every class
    occurs, both agree.
    """
    pred, target = _labels(pred), torch.as_tensor(target).long()
    _same_length(pred, target)
    for name, labels in (("pred", pred), ("target", target)):
        if labels.min() < 0 or labels.max() >= num_classes:
            raise ValueError(f"{name} holds labels outside [0, {num_classes})")
    support = torch.bincount(target, minlength=num_classes).double()
    correct = torch.bincount(target[pred == target], minlength=num_classes).double()
    included = support > 0
    if count_absent_predicted:
        included |= torch.bincount(pred, minlength=num_classes) > 0
    per_class = correct[included] / support[included].clamp(min=1)
    return 100.0 * per_class.mean().item()


def recall_at_k(
    scores: torch.Tensor | np.ndarray,
    positives: torch.Tensor | np.ndarray | Sequence[Sequence[int]],
    ks: Sequence[int] = (1, 5, 10),
    chunk_size: int = 1024,
) -> dict[int, float]:
    """Retrieval recall@K in percent: a query counts when any of its positives is among its K best items.

    scores: (Q, N), higher = better match. positives: a (Q, N) bool mask, a (Q,) tensor holding one
    positive index per query, a (Q, P) integer tensor padded with -1, or Q lists of indices. Queries are
    processed `chunk_size` at a time with torch.topk(max K), so memory beyond `scores` is O(chunk_size * K).
    Ties in scores are broken by torch.topk.
    """
    scores = torch.as_tensor(scores)
    check_finite("scores", scores)
    num_queries, num_items = scores.shape
    positives = _positives(positives, num_queries, num_items)
    has_positive = positives.any(dim=1) if positives.dtype == torch.bool else (positives >= 0).any(dim=1)
    if not has_positive.all():
        missing = int((~has_positive).nonzero()[0, 0])
        raise ValueError(f"recall_at_k: {int((~has_positive).sum())} queries have no positive, first: query {missing}")
    max_k = min(max(ks), num_items)
    hits = dict.fromkeys(ks, 0)
    for start in range(0, num_queries, chunk_size):
        top = scores[start : start + chunk_size].topk(max_k, dim=1).indices
        chunk_positives = positives[start : start + chunk_size].to(top.device)
        if chunk_positives.dtype == torch.bool:
            is_positive = chunk_positives.gather(1, top)
        else:
            is_positive = (top[:, :, None] == chunk_positives[:, None, :]).any(dim=2)
        for k in ks:
            hits[k] += int(is_positive[:, :k].any(dim=1).sum())
    return {k: 100.0 * hits[k] / num_queries for k in ks}


def _positives(positives, num_queries: int, num_items: int) -> torch.Tensor:
    """Positives as a (Q, N) bool mask or a (Q, P) long tensor padded with -1."""
    if isinstance(positives, (torch.Tensor, np.ndarray)):
        positives = torch.as_tensor(positives)
        if positives.dtype == torch.bool:
            if positives.shape != (num_queries, num_items):
                raise ValueError(f"positives mask has shape {tuple(positives.shape)}, scores {(num_queries, num_items)}")
            return positives
        positives = positives.long().reshape(positives.shape[0], -1)
    else:
        lists = [list(p) for p in positives]
        width = max((len(p) for p in lists), default=0)
        positives = torch.full((len(lists), width), -1, dtype=torch.long)
        for row, p in enumerate(lists):
            positives[row, : len(p)] = torch.as_tensor(p, dtype=torch.long)
    if positives.shape[0] != num_queries:
        raise ValueError(f"positives given for {positives.shape[0]} queries, scores have {num_queries}")
    if positives.numel() and (positives.max() >= num_items or positives.min() < -1):
        raise ValueError(f"positive indices must lie in [0, {num_items}) (-1 pads)")
    return positives


# -- Hierarchical classification (HyCoCLIP App. C, Eq. 13; Kosmopoulos et al. 2015) -------------------
# Ancestor sets A(c) are the *strict* ancestors of c ("the set of ancestor nodes of classes"); HyCoCLIP's
# released code (hycoclip/evaluation/hierarchical_metrics.py) reads them from a pickle whose convention is
# only implied by the printed numbers (below). With strict sets, the LCA error of the
# paper ("the distance to the deepest common node ... shared between the ancestors of y_hat and y") is the
# number of edges from y_hat up to the deepest common strict ancestor, which on a tree equals the code's
# |A(y_hat)| - |A(y_hat) & A(y)| + 1; it is 1, not 0, for a correct prediction and for siblings. On a DAG
# (WordNet) the set formula is used. Table 2's printed LCA values fit this convention: for leaf classes of
# equal depth LCA = a + TIE/2 with a the top-1 accuracy, e.g. ViT-B/16 CLIP 0.406 + 3.60/2 = 2.21 (printed
# 2.21), HyCoCLIP 0.458 + 3.17/2 = 2.04 (printed 2.05), taking a from Table 1; self-inclusive ancestor sets
# would add 1 - a (about 0.6) to every value.


def _mean_over_pairs(
    pred: torch.Tensor | np.ndarray,
    target: torch.Tensor | np.ndarray,
    class_nodes: Sequence[Hashable],
    value: Callable[[Hashable, Hashable], float],
) -> float:
    """Mean of value(node[pred_i], node[target_i]), evaluated once per distinct (pred, target) pair."""
    pred, target = _labels(pred), torch.as_tensor(target).long()
    _same_length(pred, target)
    pairs, counts = torch.unique(torch.stack([pred, target], dim=1), dim=0, return_counts=True)
    values = torch.tensor([value(class_nodes[p], class_nodes[t]) for p, t in pairs.tolist()], dtype=torch.float64)
    return (values * counts).sum().item() / counts.sum().item()


def _ancestor_sets(hierarchy: IsAHierarchy, pred_node: Hashable, true_node: Hashable) -> tuple[frozenset, frozenset]:
    """Strict ancestor sets of the predicted and true nodes; a root class (empty set) is an error."""
    pred_anc, true_anc = hierarchy.ancestors(pred_node), hierarchy.ancestors(true_node)
    for node, anc in ((pred_node, pred_anc), (true_node, true_anc)):
        if not anc:
            raise ValueError(f"{hierarchy.source}: class node {node!r} has no ancestors (it is a root)")
    return pred_anc, true_anc


def tree_induced_error(pred, target, hierarchy: IsAHierarchy, class_nodes: Sequence[Hashable]) -> float:
    """Mean TIE in edges: shortest-path length between predicted and true class nodes (w_e = 1).

    pred: (N,) class indices or (N, C) scores; target: (N,); class_nodes[i]: node of class i in `hierarchy`.
    """
    return _mean_over_pairs(pred, target, class_nodes, hierarchy.distance)


def lca_error(pred, target, hierarchy: IsAHierarchy, class_nodes: Sequence[Hashable]) -> float:
    """Mean LCA error in edges: |A(y_hat) minus A(y)| + 1, edges from y_hat up to the deepest common ancestor.

    See the convention note above; arguments as in `tree_induced_error`.
    """

    def value(pred_node, true_node):
        pred_anc, true_anc = _ancestor_sets(hierarchy, pred_node, true_node)
        return len(pred_anc - true_anc) + 1

    return _mean_over_pairs(pred, target, class_nodes, value)


def hierarchical_jaccard(pred, target, hierarchy: IsAHierarchy, class_nodes: Sequence[Hashable]) -> float:
    """Mean |A(y_hat) & A(y)| / |A(y_hat) | A(y)| over samples, a fraction (HyCoCLIP Eq. 13, J)."""

    def value(pred_node, true_node):
        pred_anc, true_anc = _ancestor_sets(hierarchy, pred_node, true_node)
        return len(pred_anc & true_anc) / len(pred_anc | true_anc)

    return _mean_over_pairs(pred, target, class_nodes, value)


def hierarchical_precision(pred, target, hierarchy: IsAHierarchy, class_nodes: Sequence[Hashable]) -> float:
    """Mean |A(y_hat) & A(y)| / |A(y_hat)| over samples, a fraction (HyCoCLIP Eq. 13, P_H)."""

    def value(pred_node, true_node):
        pred_anc, true_anc = _ancestor_sets(hierarchy, pred_node, true_node)
        return len(pred_anc & true_anc) / len(pred_anc)

    return _mean_over_pairs(pred, target, class_nodes, value)


def hierarchical_recall(pred, target, hierarchy: IsAHierarchy, class_nodes: Sequence[Hashable]) -> float:
    """Mean |A(y_hat) & A(y)| / |A(y)| over samples, a fraction (HyCoCLIP Eq. 13, R_H)."""

    def value(pred_node, true_node):
        pred_anc, true_anc = _ancestor_sets(hierarchy, pred_node, true_node)
        return len(pred_anc & true_anc) / len(true_anc)

    return _mean_over_pairs(pred, target, class_nodes, value)


# -- HierarCaps (Alper & Averbuch-Elor 2024, Sec. 6.1 and App. B.5; code TAU-VAILab/hierarcaps eval.py) --
HierarCapsVariant = Literal["paper", "code"]


def hierarcaps_retrieved(
    similarity: torch.Tensor | np.ndarray,
    text_radii: torch.Tensor | np.ndarray,
    *,
    variant: HierarCapsVariant,
    steps: int = 50,
) -> torch.Tensor:
    """(I, T) bool: the texts retrieved for each image by HierarCaps' radius-threshold retrieval.

    similarity: (I, T) image-text score over the candidate texts (cosine for CLIP; higher = closer).
    text_radii: (T,) d_r(e), each candidate text's distance from the root (the empty-string embedding).
    At each of `steps` radius levels the retrieved text is the one most similar to the image among texts
    with radius <= level. variant="paper" (App. B.5): per image, levels equally spaced from the root (0) to
    the radius of the text closest to the image, and the prediction closest to the root is omitted.
    variant="code" (released eval.py): levels are linspace(min, max) of all text radii, shared by every
    image, and nothing is omitted.
    """
    similarity, text_radii = torch.as_tensor(similarity), torch.as_tensor(text_radii)
    check_finite("similarity", similarity)
    check_finite("text_radii", text_radii)
    if similarity.shape[1:] != text_radii.shape:
        raise ValueError(f"similarity {tuple(similarity.shape)} does not match text_radii {tuple(text_radii.shape)}")
    fraction = torch.arange(steps, dtype=text_radii.dtype) / (steps - 1)
    if variant == "code":
        low, high = text_radii.min(), text_radii.max()
        levels = (low + (high - low) * fraction).expand(similarity.shape[0], steps)
    elif variant == "paper":
        nearest_radius = text_radii[similarity.argmax(dim=1)]
        levels = nearest_radius[:, None] * fraction[None, :]
    else:
        raise ValueError(f"variant must be 'paper' or 'code', not {variant!r}")
    predictions, valid = [], []
    for step in range(steps):
        allowed = text_radii[None, :] <= levels[:, step : step + 1]
        predictions.append(similarity.masked_fill(~allowed, -torch.inf).argmax(dim=1))
        valid.append(allowed.any(dim=1))
    predictions, valid = torch.stack(predictions, dim=1), torch.stack(valid, dim=1)
    retrieved = torch.zeros(similarity.shape, dtype=torch.bool)
    rows = torch.arange(similarity.shape[0])[:, None].expand_as(predictions)
    retrieved[rows[valid], predictions[valid]] = True
    if variant == "paper":
        # Candidate sets only grow with the level, so the first prediction never reappears later.
        first = predictions.gather(1, valid.double().argmax(dim=1, keepdim=True)).squeeze(1)
        retrieved[torch.arange(similarity.shape[0]), first] = False
    return retrieved


def hierarcaps_precision_recall(
    similarity: torch.Tensor | np.ndarray,
    text_radii: torch.Tensor | np.ndarray,
    ground_truth: torch.Tensor | np.ndarray,
    *,
    variant: HierarCapsVariant,
    steps: int = 50,
    image_of: torch.Tensor | np.ndarray | None = None,
) -> dict[str, float]:
    """HierarCaps P and R as fractions, averaged over images.

    ground_truth: (N, K) indices into the candidate texts of each test row's K (= 4) ground-truth captions, most
    general tier first. image_of: (N,) the image (row of `similarity`) of each test row; None: row i's is image i.
    Each image is scored once against the captions of every row that shows it, as the released eval.py does
    (several COCO captions may describe one image): P = |retrieved & GT| / max(1, |retrieved|), GT the union of
    its rows' captions; R = the fraction of the K tiers whose caption, of any of its rows, is retrieved.
    similarity, text_radii, variant, steps: as in `hierarcaps_retrieved`.
    """
    retrieved = hierarcaps_retrieved(similarity, text_radii, variant=variant, steps=steps)
    ground_truth = torch.as_tensor(ground_truth).long()
    num_images = retrieved.shape[0]
    image_of = torch.arange(ground_truth.shape[0]) if image_of is None else torch.as_tensor(image_of).long()
    if image_of.shape != ground_truth.shape[:1] or not torch.equal(image_of.unique(), torch.arange(num_images)):
        raise ValueError(f"the {ground_truth.shape[0]} ground-truth rows must show each of the {num_images} images")
    rows = image_of[:, None].expand_as(ground_truth)
    gt_mask = torch.zeros_like(retrieved)
    gt_mask[rows, ground_truth] = True
    precision = (retrieved & gt_mask).sum(dim=1).double() / retrieved.sum(dim=1).clamp(min=1)
    tier_found = torch.zeros(num_images, ground_truth.shape[1], dtype=torch.float64)
    tier_found.index_add_(0, image_of, retrieved[rows, ground_truth].double())
    recall = (tier_found > 0).double().mean(dim=1)
    return {"precision": precision.mean().item(), "recall": recall.mean().item()}


def kendall_tau_d(radii: torch.Tensor | np.ndarray, *, variant: HierarCapsVariant) -> float:
    """HierarCaps' order-aware tau_d: mean over items of Kendall's tau between radii and tier order.

    radii: (M, K) d_r(e) of each item's K ground-truth texts, most general tier first; tau = 1 when radii
    increase with the tier. variant="paper": tau-b of (radii, 1..K) (scipy's default), which discounts tied
    radii and is undefined (error) for an item whose radii are all equal. variant="code": tau of
    (argsort(radii), 1..K) as in the released eval.py; the stable argsort makes tied radii count as
    correctly ordered.
    """
    from scipy.stats import kendalltau

    radii = torch.as_tensor(radii).double()
    check_finite("radii", radii)
    if variant not in ("paper", "code"):
        raise ValueError(f"variant must be 'paper' or 'code', not {variant!r}")
    radii = radii.numpy()
    if variant == "paper":
        constant = (radii == radii[:, :1]).all(axis=1)
        if constant.any():
            item = int(constant.nonzero()[0][0])
            raise ValueError(f"kendall_tau_d: tau-b undefined for item {item}, all its radii are equal")
    else:
        radii = np.argsort(radii, axis=1, kind="stable")
    order = np.arange(radii.shape[1])
    return float(np.mean([kendalltau(row, order).statistic for row in radii]))


def spearman_rho(pred: torch.Tensor | np.ndarray, target: torch.Tensor | np.ndarray) -> float:
    """Spearman's rank correlation of (N,) predicted and (N,) true scores (ties get average ranks), in [-1, 1]
    (HyperLex's rho, HierarCaps paper Table 6)."""
    from scipy.stats import spearmanr

    pred, target = torch.as_tensor(pred).double(), torch.as_tensor(target).double()
    check_finite("pred", pred)
    _same_length(pred, target)
    if any(bool((x == x[0]).all()) for x in (pred, target)):
        raise ValueError("spearman_rho: undefined when either input is constant")
    return float(spearmanr(pred.numpy(), target.numpy()).statistic)


# -- Zero-shot detection with ground-truth boxes (HyCoCLIP Table 3, RegionCLIP's protocol) ------------
DETECTION_SCORE_THRESHOLD = 0.001  # RegionCLIP / detectron2 test-time settings
DETECTION_NMS_IOU = 0.5
DETECTIONS_PER_IMAGE = 100


def all_class_detections(
    image_ids: torch.Tensor | np.ndarray | Sequence[int],
    boxes: torch.Tensor | np.ndarray,
    probabilities: torch.Tensor | np.ndarray,
    category_ids: Sequence[int],
    score_threshold: float = DETECTION_SCORE_THRESHOLD,
    nms_iou: float = DETECTION_NMS_IOU,
    max_per_image: int = DETECTIONS_PER_IMAGE,
) -> list[dict]:
    """COCO-format detections from scoring every proposal against every class (RegionCLIP's inference).

    Row i is one proposal: image_ids[i], boxes[i] = (x, y, w, h) in pixels, probabilities[i, j] its score
    for category category_ids[j]. Per image, every (proposal, class) pair scoring strictly above
    `score_threshold` is a candidate; per class, NMS at IoU `nms_iou` (torchvision.ops.batched_nms) drops
    candidates overlapping a better one by more than that; the best `max_per_image` survivors are kept.
    Returns dicts {image_id, category_id, bbox, score}, best first within each image.
    """
    from torchvision.ops import batched_nms, box_convert

    boxes, probabilities = torch.as_tensor(boxes).double(), torch.as_tensor(probabilities).double()
    check_finite("boxes", boxes)
    check_finite("probabilities", probabilities)
    image_ids = torch.as_tensor(image_ids).long()
    if not (len(image_ids) == len(boxes) == len(probabilities)) or probabilities.shape[1:] != (len(category_ids),):
        raise ValueError(f"all_class_detections: {len(image_ids)} image ids, boxes {tuple(boxes.shape)}, "
                         f"probabilities {tuple(probabilities.shape)} for {len(category_ids)} categories")
    corners = box_convert(boxes, "xywh", "xyxy")
    detections = []
    for image in image_ids.unique().tolist():
        rows, columns = ((image_ids[:, None] == image) & (probabilities > score_threshold)).nonzero(as_tuple=True)
        scores = probabilities[rows, columns]
        keep = batched_nms(corners[rows], scores, columns, nms_iou)[:max_per_image]
        detections += [{"image_id": image, "category_id": category_ids[columns[k]], "bbox": boxes[rows[k]].tolist(),
                        "score": float(scores[k])} for k in keep.tolist()]
    return detections


def coco_box_ap(
    image_ids: torch.Tensor | np.ndarray | Sequence[int],
    boxes: torch.Tensor | np.ndarray,
    true_categories: torch.Tensor | np.ndarray | Sequence[int],
    detections: Sequence[dict],
    category_ids: Sequence[int],
) -> dict[str, float]:
    """COCO bbox AP in percent of `detections` (dicts as `all_class_detections` returns) against ground truth.

    Row i of the ground truth is one box: image_ids[i], boxes[i] = (x, y, w, h) in pixels, true_categories[i].
    Returns {"ap": AP@[.5:.95], "ap50": AP@.5}, averaged by pycocotools' COCOeval over the `category_ids`
    that have ground truth (e.g. the 17 novel COCO categories of Bansal et al. 2018). A detection on a
    ground-truth box can match another ground-truth box it overlaps, so AP and AP50 differ where boxes
    overlap (two boxes at IoU 2/3, the wrong one scored first: AP50 100, AP 70).
    """
    require("pycocotools", "detection")
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    boxes = torch.as_tensor(boxes).double()
    check_finite("boxes", boxes)
    image_ids, true_categories = (torch.as_tensor(x).long().tolist() for x in (image_ids, true_categories))
    if not len(image_ids) == len(boxes) == len(true_categories):
        raise ValueError("coco_box_ap: ground-truth inputs have different numbers of boxes")
    wanted = set(category_ids)
    if not wanted & set(true_categories):
        raise ValueError("coco_box_ap: no ground-truth box in the chosen categories")
    check_finite("detection scores", torch.tensor([d["score"] for d in detections], dtype=torch.float64))
    detections = [d for d in detections if d["category_id"] in wanted]
    if not detections:
        return {"ap": 0.0, "ap50": 0.0}
    categories = sorted(wanted | set(true_categories) | {d["category_id"] for d in detections})
    ground_truth = COCO()
    ground_truth.dataset = {
        "images": [{"id": i} for i in sorted(set(image_ids))],
        "categories": [{"id": c} for c in categories],
        "annotations": [
            {"id": n + 1, "image_id": i, "category_id": c, "bbox": b, "area": b[2] * b[3], "iscrowd": 0}
            for n, (i, c, b) in enumerate(zip(image_ids, true_categories, boxes.tolist()))
        ],
    }
    with contextlib.redirect_stdout(io.StringIO()):
        ground_truth.createIndex()
        evaluation = COCOeval(ground_truth, ground_truth.loadRes([dict(d) for d in detections]), iouType="bbox")
        evaluation.params.catIds = sorted(wanted)
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    return {"ap": 100.0 * float(evaluation.stats[0]), "ap50": 100.0 * float(evaluation.stats[1])}


# -- Compositional benchmarks ---------------------------------------------------------------------------


def vg_attribution_macro_accuracy(
    correct: torch.Tensor | np.ndarray | Sequence[bool],
    pair_ids: Sequence[Hashable] | np.ndarray | torch.Tensor,
    min_count: int = 25,
) -> float:
    """ARO VG-Attribution macro accuracy in percent: mean over attribute pairs of the pair's accuracy.

    correct: (N,) bool, the true caption outscored the attribute-swapped one (a tie is wrong, as ARO's
    argmax picks the swapped caption listed first). pair_ids: (N,) the sample's attribute pair, e.g.
    f"{attr0}_{attr1}" as ARO groups them. Pairs with fewer than `min_count` samples are dropped (ARO: 25).
    """
    correct = torch.as_tensor(np.asarray(correct, dtype=bool))
    groups, index = np.unique(np.asarray(pair_ids), return_inverse=True)
    if len(index) != len(correct):
        raise ValueError(f"{len(correct)} results but {len(index)} pair ids")
    index = torch.as_tensor(index.reshape(-1))
    counts = torch.bincount(index, minlength=len(groups))
    hits = torch.bincount(index, weights=correct.double(), minlength=len(groups))
    kept = counts >= min_count
    if not kept.any():
        raise ValueError(f"vg_attribution_macro_accuracy: no attribute pair has >= {min_count} samples")
    return 100.0 * (hits[kept] / counts[kept]).mean().item()


def itc_accuracy(pos_scores: torch.Tensor | np.ndarray, neg_scores: torch.Tensor | np.ndarray) -> float:
    """VL-CheckList ITC accuracy in percent: share of images whose positive caption scores strictly above
    the negative one (pos_scores, neg_scores: (N,) image-caption scores; ties count as wrong)."""
    pos_scores, neg_scores = torch.as_tensor(pos_scores), torch.as_tensor(neg_scores)
    check_finite("pos_scores", pos_scores)
    check_finite("neg_scores", neg_scores)
    _same_length(pos_scores, neg_scores)
    return 100.0 * (pos_scores > neg_scores).double().mean().item()


# -- Linear probe (MERU App. C, following CLIP / Kornblith et al. 2019) ---------------------------------


@dataclass(frozen=True)
class LinearProbeResult:
    """Chosen cost, its val and test mean per-class accuracy (percent), and every (C, val accuracy) tried."""

    best_c: float
    val_accuracy: float
    test_accuracy: float
    trials: tuple[tuple[float, float], ...]


def linear_probe_c_search(
    train: tuple[torch.Tensor | np.ndarray, torch.Tensor | np.ndarray],
    val: tuple[torch.Tensor | np.ndarray, torch.Tensor | np.ndarray],
    test: tuple[torch.Tensor | np.ndarray, torch.Tensor | np.ndarray],
    coarse_costs: Sequence[float] = (1e-6, 1e-4, 1e-2, 1.0, 1e2, 1e4, 1e6),
    refine_steps: int = 4,
    max_iter: int = 1000,
) -> LinearProbeResult:
    """Logistic-regression probe on frozen features (x: (N, D), y: (N,) class indices per split).

    sklearn LogisticRegression (L-BFGS, random_state=0, max_iter=1000) is fit on train and scored on val
    by mean per-class accuracy for every coarse cost; then `refine_steps` rounds try best/delta and
    best*delta with delta = 10, 10**0.5, 10**0.25, ... (a binary search in log space; a cost replaces the
    best only when strictly better). The best cost is refit on train + val and scored on test.
    """
    from sklearn.linear_model import LogisticRegression

    (train_x, train_y), (val_x, val_y), (test_x, test_y) = (
        (np.asarray(x, dtype=np.float64), np.asarray(y).astype(np.int64)) for x, y in (train, val, test)
    )
    for name, x in (("train features", train_x), ("val features", val_x), ("test features", test_x)):
        check_finite(name, x)
    num_classes = int(max(train_y.max(), val_y.max(), test_y.max())) + 1

    def fit(cost: float, x: np.ndarray, y: np.ndarray):
        return LogisticRegression(C=cost, random_state=0, max_iter=max_iter).fit(x, y)

    trials: list[tuple[float, float]] = []
    best_c, best_accuracy = None, -1.0

    def try_cost(cost: float) -> None:
        nonlocal best_c, best_accuracy
        accuracy = mean_per_class_accuracy(fit(cost, train_x, train_y).predict(val_x), val_y, num_classes)
        trials.append((cost, accuracy))
        if accuracy > best_accuracy:
            best_c, best_accuracy = cost, accuracy

    for cost in coarse_costs:
        try_cost(cost)
    delta = 10.0
    for _ in range(refine_steps):
        center = best_c
        for cost in (center / delta, center * delta):
            try_cost(cost)
        delta **= 0.5
    final = fit(best_c, np.concatenate([train_x, val_x]), np.concatenate([train_y, val_y]))
    test_accuracy = mean_per_class_accuracy(final.predict(test_x), test_y, num_classes)
    return LinearProbeResult(best_c, best_accuracy, test_accuracy, tuple(trials))


def _same_length(a: torch.Tensor, b: torch.Tensor) -> None:
    """Paired per-sample inputs must have equal, non-zero length."""
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"length mismatch: {a.shape[0]} vs {b.shape[0]}")
    if a.shape[0] == 0:
        raise ValueError("no samples")
