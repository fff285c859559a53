"""Classification metrics: top-1, top-k and mean per-class accuracy (zero-shot), and the linear probe's cost search."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from hypvl.evaluate.metrics.checks import check_finite, class_labels, same_length


def top1_accuracy(pred: torch.Tensor | np.ndarray, target: torch.Tensor | np.ndarray) -> float:
    """Percent of samples whose prediction equals the target; pred: (N,) indices or (N, C) scores, target: (N,)."""
    pred, target = class_labels(pred), torch.as_tensor(target).long()
    same_length(pred, target)
    return 100.0 * (pred == target).double().mean().item()


def top_k_accuracy(scores: torch.Tensor | np.ndarray, target: torch.Tensor | np.ndarray, k: int) -> float:
    """Percent of samples whose target is among the `k` highest of their (N, C) scores (CLIP_benchmark's acc5 for
    k=5). Ties rank as `argmax` breaks them, the lower class index first, so k=1 is `top1_accuracy`."""
    scores, target = torch.as_tensor(scores), torch.as_tensor(target).long()
    check_finite("scores", scores)
    same_length(scores, target)
    if not 1 <= k <= scores.shape[1]:
        raise ValueError(f"top-{k} accuracy needs 1 <= k <= {scores.shape[1]} classes")
    own = scores.gather(1, target[:, None])
    classes = torch.arange(scores.shape[1])
    ahead = (scores > own) | ((scores == own) & (classes[None, :] < target[:, None]))
    return 100.0 * (ahead.sum(dim=1) < k).double().mean().item()


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
    pred, target = class_labels(pred), torch.as_tensor(target).long()
    same_length(pred, target)
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
