"""HierarCaps' metrics against hand-worked cases and brute force: precision and recall of the retrieved captions
(the paper's and the public code's readings), Kendall's tau-d by counting pairs, Spearman's rho as Pearson's of
average ranks."""

import math

import numpy as np
import pytest
import torch

from hypvl.evaluate.metrics.checks import NonFiniteEmbeddingError
from hypvl.evaluate.metrics.hierarcaps import (
    hierarcaps_precision_recall,
    hierarcaps_retrieved,
    kendall_tau_d,
    spearman_rho,
)


def test_hierarcaps_hand_worked():
    # Texts t0..t4 with radii 0.1..0.5; the image's similarities favour t3 (0.5), then t4, t1, t2, t0.
    # code:  global levels 0.1..0.5 -> t0 (only candidate), t1 once r >= 0.2, t3 once r >= 0.4 -> {t0, t1, t3}
    # paper: levels 0..r(t3) = 0.4 -> none, t0, t1, t3; omit t0                                  -> {t1, t3}
    # GT {t1, t2, t3, t4}: code P = 2/3, R = 2/4; paper P = 2/2, R = 2/4.
    similarity = torch.tensor([[0.1, 0.3, 0.2, 0.5, 0.4]])
    radii = torch.tensor([0.1, 0.2, 0.3, 0.4, 0.5])
    ground_truth = torch.tensor([[1, 2, 3, 4]])
    assert hierarcaps_retrieved(similarity, radii, variant="code")[0].tolist() == [True, True, False, True, False]
    assert hierarcaps_retrieved(similarity, radii, variant="paper")[0].tolist() == [False, True, False, True, False]
    code = hierarcaps_precision_recall(similarity, radii, ground_truth, variant="code")
    paper = hierarcaps_precision_recall(similarity, radii, ground_truth, variant="paper")
    assert code == pytest.approx({"precision": 2 / 3, "recall": 0.5})
    assert paper == pytest.approx({"precision": 1.0, "recall": 0.5})


def test_hierarcaps_scores_each_image_once_against_all_its_rows_captions():
    # The hand-worked image above (code retrieves {t0, t1, t3}, paper {t1, t3}) shown by rows A = (t1, t2, t3, t4)
    # and B = (t0, t2, t4, t3); a second, identical image by row C = (t1, t2, t3, t4) alone. Rows in file order A, C, B.
    # Image 0, GT = A | B = {t0..t4}: code P = 3/3; tiers found in A or B: t1 | t0, -, t3, t4 | t3 -> R = 3/4.
    #   paper P = 2/2; tiers: t1, -, t3, t3 (B) -> R = 3/4.
    # Image 1: as the hand-worked case, code P = 2/3, R = 2/4; paper P = 1, R = 2/4.
    # Means over the two images: code P = 5/6, R = 5/8; paper P = 1, R = 5/8 (per row it would be P = 2/3, R = 1/2).
    similarity = torch.tensor([[0.1, 0.3, 0.2, 0.5, 0.4]]).expand(2, 5)
    radii = torch.tensor([0.1, 0.2, 0.3, 0.4, 0.5])
    ground_truth = torch.tensor([[1, 2, 3, 4], [1, 2, 3, 4], [0, 2, 4, 3]])
    image_of = torch.tensor([0, 1, 0])
    code = hierarcaps_precision_recall(similarity, radii, ground_truth, variant="code", image_of=image_of)
    paper = hierarcaps_precision_recall(similarity, radii, ground_truth, variant="paper", image_of=image_of)
    assert code == pytest.approx({"precision": 5 / 6, "recall": 5 / 8})
    assert paper == pytest.approx({"precision": 1.0, "recall": 5 / 8})
    # one row per image: the same as leaving image_of out
    one_each = ground_truth[:2]
    assert hierarcaps_precision_recall(similarity, radii, one_each, variant="code", image_of=torch.tensor([1, 0])) \
        == hierarcaps_precision_recall(similarity, radii, one_each, variant="code")
    with pytest.raises(ValueError, match="must show each of the 2 images"):
        hierarcaps_precision_recall(similarity, radii, ground_truth, variant="code", image_of=torch.tensor([0, 0, 0]))


def brute_force_hierarcaps(similarity, radii, ground_truth, variant, steps=50):
    precisions, recalls = [], []
    for sims, truth in zip(similarity, ground_truth):
        if variant == "code":
            low, high = min(radii), max(radii)
        else:
            low, high = 0.0, radii[max(range(len(sims)), key=lambda j: sims[j])]
        predictions = []
        for step in range(steps):
            level = low + (high - low) * step / (steps - 1)
            candidates = [j for j in range(len(sims)) if radii[j] <= level + 1e-12]
            if candidates:
                best = max(candidates, key=lambda j: sims[j])
                if not predictions or predictions[-1] != best:
                    predictions.append(best)
        if variant == "paper":
            predictions = predictions[1:]
        retrieved = set(predictions)
        precisions.append(len(retrieved & set(truth)) / max(1, len(retrieved)))
        recalls.append(sum(t in retrieved for t in truth) / len(truth))
    return {"precision": float(np.mean(precisions)), "recall": float(np.mean(recalls))}


@pytest.mark.parametrize("variant", ["paper", "code"])
def test_hierarcaps_matches_brute_force(rng, variant):
    num_images, num_texts = 30, 120
    radii = rng.uniform(0.2, 1.0, size=num_texts)
    similarity = rng.normal(size=(num_images, num_texts))
    ground_truth = np.stack([rng.choice(num_texts, size=4, replace=False) for _ in range(num_images)])
    # Make the ground truth competitive so that recall is not trivially 0.
    similarity[np.arange(num_images)[:, None], ground_truth] += 1.5
    expected = brute_force_hierarcaps(similarity.tolist(), radii.tolist(), ground_truth.tolist(), variant)
    got = hierarcaps_precision_recall(similarity, radii, ground_truth, variant=variant)
    assert got == pytest.approx(expected, abs=1e-9)
    assert got["recall"] > 0


def brute_force_tau(x, variant: str) -> float:
    """Kendall's tau of x against its tier order 1..K by counting pairs: tau-b (paper) or eval.py's tau of the
    stable argsort (code), where a tie keeps the tiers' order and so counts as concordant."""
    pairs = [(x[i], x[j]) for i in range(len(x)) for j in range(i + 1, len(x))]  # the tier order rises in each pair
    concordant = sum(a < b for a, b in pairs)
    discordant = sum(a > b for a, b in pairs)
    if variant == "code":
        return (len(pairs) - 2 * discordant) / len(pairs)
    return (concordant - discordant) / math.sqrt((concordant + discordant) * len(pairs))  # no ties in 1..K


def test_kendall_tau_d_against_pair_counting(rng):
    radii = rng.integers(0, 4, size=(200, 4)).astype(float)  # small integer range -> many ties
    radii = radii[radii.std(axis=1) > 0]  # tau-b is undefined for constant rows
    paper = np.mean([brute_force_tau(row.tolist(), "paper") for row in radii])
    code = np.mean([brute_force_tau(row.tolist(), "code") for row in radii])
    assert kendall_tau_d(radii, variant="paper") == pytest.approx(paper, abs=1e-12)
    assert kendall_tau_d(torch.as_tensor(radii), variant="code") == pytest.approx(code, abs=1e-12)
    assert abs(paper - code) > 1e-3  # the variants differ when radii tie
    untied = rng.normal(size=(50, 4))
    expected = np.mean([brute_force_tau(row.tolist(), "paper") for row in untied])
    assert kendall_tau_d(untied, variant="paper") == pytest.approx(expected, abs=1e-12)
    assert kendall_tau_d(untied, variant="code") == pytest.approx(expected, abs=1e-12)
    assert kendall_tau_d([[0.1, 0.2, 0.3, 0.4]], variant="paper") == 1.0
    # worked by hand: one tie (2, 2) among 6 pairs, 5 concordant: tau-b = 5 / sqrt(5 * 6); code: (6 - 0) / 6
    assert kendall_tau_d([[1.0, 2.0, 2.0, 3.0]], variant="paper") == pytest.approx(5 / math.sqrt(30))
    assert kendall_tau_d([[1.0, 2.0, 2.0, 3.0]], variant="code") == 1.0
    # no ties: 4 concordant, 2 discordant pairs (tau 1/3), then 2 and 4 (tau -1/3); mean 0 in both variants
    for variant in ("paper", "code"):
        assert kendall_tau_d([[2.0, 1.0, 4.0, 3.0], [3.0, 4.0, 1.0, 2.0]], variant=variant) == pytest.approx(0.0)


def average_ranks(values: list[float]) -> list[float]:
    """1-based ranks, tied values sharing the mean of the ranks they span."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def test_spearman_rho_is_pearson_of_average_ranks(rng):
    pred, target = rng.normal(size=40), rng.integers(0, 6, size=40).astype(float)  # many ties in target
    pred[:5] = pred[5]
    expected = np.corrcoef(average_ranks(pred.tolist()), average_ranks(target.tolist()))[0, 1]
    assert spearman_rho(pred, target) == pytest.approx(expected, abs=1e-12)
    assert spearman_rho(torch.arange(5.0), torch.tensor([1.0, 3.0, 7.0, 8.0, 9.0])) == pytest.approx(1.0)
    assert spearman_rho([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == pytest.approx(-1.0)
    # ranks (1, 2, 3) against (1.5, 1.5, 3): Pearson = 1.5 / sqrt(2 * 1.5) = sqrt(3) / 2
    assert spearman_rho([1.0, 2.0, 3.0], [5.0, 5.0, 9.0]) == pytest.approx(math.sqrt(3) / 2)
    with pytest.raises(ValueError, match="constant"):
        spearman_rho(pred, np.ones(40))
    with pytest.raises(NonFiniteEmbeddingError):
        spearman_rho([1.0, float("nan"), 3.0], [1.0, 2.0, 3.0])


def test_kendall_tau_d_errors():
    with pytest.raises(ValueError, match="item 1"):
        kendall_tau_d([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]], variant="paper")
    assert kendall_tau_d([[2.0, 2.0, 2.0, 2.0]], variant="code") == 1.0
    with pytest.raises(NonFiniteEmbeddingError):
        kendall_tau_d([[1.0, float("nan"), 3.0, 4.0]], variant="code")
