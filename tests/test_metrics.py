"""Metrics against independent oracles: scikit-learn, pycocotools, brute force and hand-worked cases."""

import contextlib
import io
import math
import warnings

import numpy as np
import pytest
import torch
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, balanced_accuracy_score, recall_score

from hypvl.errors import InputError
from hypvl.evaluate.hierarchy import IsAHierarchy
from hypvl.evaluate.metrics.checks import NonFiniteEmbeddingError, check_finite
from hypvl.evaluate.metrics.classification import linear_probe_c_search, mean_per_class_accuracy, top1_accuracy
from hypvl.evaluate.metrics.compositional import itc_accuracy, vg_attribution_macro_accuracy
from hypvl.evaluate.metrics.detection import all_class_detections, coco_box_ap
from hypvl.evaluate.metrics.hierarcaps import (
    hierarcaps_precision_recall,
    hierarcaps_retrieved,
    kendall_tau_d,
    spearman_rho,
)
from hypvl.evaluate.metrics.hierarchical import (
    hierarchical_jaccard,
    hierarchical_precision,
    hierarchical_recall,
    lca_error,
    tree_induced_error,
)
from hypvl.evaluate.metrics.retrieval import recall_at_k


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# -- classification ---------------------------------------------------------------------------------


def test_accuracies_match_sklearn(rng):
    for _ in range(5):
        target = rng.integers(0, 7, size=300)
        scores = rng.normal(size=(300, 7)) + 2.0 * np.eye(7)[target] * rng.random((300, 1))
        pred = scores.argmax(1)
        assert top1_accuracy(torch.as_tensor(scores), target) == pytest.approx(
            100 * accuracy_score(target, pred), abs=1e-6
        )
        assert mean_per_class_accuracy(pred, torch.as_tensor(target), 7) == pytest.approx(
            100 * balanced_accuracy_score(target, pred), abs=1e-6
        )


def test_mean_per_class_accuracy_absent_classes(rng):
    # Class 4 never occurs in target but is predicted; class 5 occurs nowhere.
    target = rng.integers(0, 4, size=200)
    pred = np.where(rng.random(200) < 0.3, 4, rng.integers(0, 4, size=200))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns that y_pred holds classes absent from y_true
        balanced = balanced_accuracy_score(target, pred)
    assert mean_per_class_accuracy(pred, target, 6) == pytest.approx(100 * balanced, abs=1e-6)
    # torchmetrics-style macro: every class present in target or pred, absent-from-target ones score 0.
    torchmetrics_like = recall_score(target, pred, labels=np.union1d(target, pred), average="macro", zero_division=0)
    got = mean_per_class_accuracy(pred, target, 6, count_absent_predicted=True)
    assert got == pytest.approx(100 * torchmetrics_like, abs=1e-6)
    assert got < mean_per_class_accuracy(pred, target, 6)


def test_classification_rejects_bad_labels():
    with pytest.raises(ValueError, match="outside"):
        mean_per_class_accuracy([0, 1, 3], [0, 1, 2], 3)
    with pytest.raises(ValueError, match="no samples"):
        top1_accuracy([], [])
    with pytest.raises(ValueError, match="length mismatch"):
        mean_per_class_accuracy([0, 1], [0, 1, 2], 3)


# -- retrieval ----------------------------------------------------------------------------------------


def brute_force_recall(scores, positive_lists, k):
    hits = 0
    for row, positives in zip(scores, positive_lists):
        ranking = sorted(range(len(row)), key=lambda j: -row[j])
        hits += any(j in positives for j in ranking[:k])
    return 100.0 * hits / len(positive_lists)


def test_recall_at_k_matches_brute_force(rng):
    num_queries, num_items = 157, 60
    scores = rng.normal(size=(num_queries, num_items))
    positive_lists = [list(rng.choice(num_items, size=rng.integers(1, 6), replace=False)) for _ in range(num_queries)]
    mask = np.zeros((num_queries, num_items), dtype=bool)
    for row, positives in enumerate(positive_lists):
        mask[row, positives] = True
    expected = {k: brute_force_recall(scores.tolist(), positive_lists, k) for k in (1, 5, 10)}
    assert 0 < expected[1] < expected[5] < expected[10] < 100
    for positives in (positive_lists, torch.as_tensor(mask)):
        for chunk_size in (1, 16, 1000):
            got = recall_at_k(torch.as_tensor(scores), positives, ks=(1, 5, 10), chunk_size=chunk_size)
            assert got == pytest.approx(expected, abs=1e-6)


def test_recall_at_k_single_positive_and_k_beyond_items(rng):
    scores = rng.normal(size=(40, 8))
    single = rng.integers(0, 8, size=40)
    got = recall_at_k(scores, torch.as_tensor(single), ks=(3, 20))
    assert got[3] == pytest.approx(brute_force_recall(scores.tolist(), [[j] for j in single], 3), abs=1e-6)
    assert got[20] == 100.0


def test_recall_at_k_rejects_queries_without_positive_and_nan():
    with pytest.raises(ValueError, match="no positive"):
        recall_at_k(torch.zeros(3, 4), [[0], [], [1]], ks=(1,))
    scores = torch.zeros(3, 4)
    scores[2, 1] = float("nan")
    with pytest.raises(NonFiniteEmbeddingError, match="scores.*row 2"):
        recall_at_k(scores, [[0], [1], [2]], ks=(1,))


def test_check_finite():
    check_finite("image embeddings", torch.ones(4, 3))
    check_finite("labels", torch.arange(4))
    embeddings = np.ones((5, 3))
    embeddings[3, 0] = np.inf
    with pytest.raises(NonFiniteEmbeddingError, match=r"text embeddings: 1 NaN/Inf.*first at row 3"):
        check_finite("text embeddings", embeddings)
    assert issubclass(NonFiniteEmbeddingError, ValueError)


# -- hierarchical classification ---------------------------------------------------------------------
#
#            r
#          /   \
#         a     b
#        / \   / \
#       c   d e   f
#
# Strict ancestor sets: A(c) = A(d) = {a, r}, A(e) = A(f) = {b, r}, A(a) = A(b) = {r}.
# (pred, true) | TIE | LCA = |A(p) - A(t)| + 1          | J    | P_H | R_H
# (c, c)       |  0  | 1  (c -> a)                      | 1    | 1   | 1
# (d, c)       |  2  | 1  (d -> a)                      | 1    | 1   | 1
# (e, c)       |  4  | 2  (e -> b -> r)                 | 1/3  | 1/2 | 1/2
# (a, c)       |  1  | 1  (a -> r)                      | 1/2  | 1   | 1/2
# (c, a)       |  1  | 2  (c -> a -> r)                 | 1/2  | 1/2 | 1
# mean         | 8/5 | 7/5                              | 2/3  | 4/5 | 4/5
SEVEN_NODE_TREE = {"a": "r", "b": "r", "c": "a", "d": "a", "e": "b", "f": "b", "r": None}
CLASSES = ["a", "b", "c", "d", "e", "f"]
PAIRS = [("c", "c"), ("d", "c"), ("e", "c"), ("a", "c"), ("c", "a")]


def test_hierarchical_metrics_hand_worked_tree():
    tree = IsAHierarchy.from_parent_map(SEVEN_NODE_TREE)
    pred = torch.tensor([CLASSES.index(p) for p, _ in PAIRS])
    target = torch.tensor([CLASSES.index(t) for _, t in PAIRS])
    assert tree_induced_error(pred, target, tree, CLASSES) == pytest.approx(8 / 5, abs=1e-9)
    assert lca_error(pred, target, tree, CLASSES) == pytest.approx(7 / 5, abs=1e-9)
    assert hierarchical_jaccard(pred, target, tree, CLASSES) == pytest.approx(2 / 3, abs=1e-9)
    assert hierarchical_precision(pred, target, tree, CLASSES) == pytest.approx(4 / 5, abs=1e-9)
    assert hierarchical_recall(pred, target, tree, CLASSES) == pytest.approx(4 / 5, abs=1e-9)


def test_hierarchical_metrics_weight_repeated_pairs():
    tree = IsAHierarchy.from_parent_map(SEVEN_NODE_TREE)
    # (e, c) three times and (c, c) once: TIE (3 * 4 + 0) / 4 = 3, J (3 * 1/3 + 1) / 4 = 1/2.
    pred, target = np.array([4, 4, 2, 4]), np.array([2, 2, 2, 2])
    assert tree_induced_error(pred, target, tree, CLASSES) == pytest.approx(3.0)
    assert hierarchical_jaccard(pred, target, tree, CLASSES) == pytest.approx(0.5)


def test_hierarchy_from_edges_dag_and_errors():
    # Diamond: x has parents a and b; y has parent a.  TIE(x, y) = 2 via a; A(x) = {a, b, r}, A(y) = {a, r}.
    dag = IsAHierarchy.from_edges([("r", "a"), ("r", "b"), ("a", "x"), ("b", "x"), ("a", "y")])
    assert dag.ancestors("x") == {"a", "b", "r"}
    assert dag.distance("x", "y") == 2
    assert lca_error([0], [1], dag, ["x", "y"]) == 2  # |{b}| + 1
    assert hierarchical_precision([0], [1], dag, ["x", "y"]) == pytest.approx(2 / 3)
    with pytest.raises(InputError, match="cycle"):
        IsAHierarchy.from_edges([("a", "b"), ("b", "c"), ("c", "a")], source="isa.txt")
    with pytest.raises(InputError, match="unknown node 'z'"):
        IsAHierarchy.from_parent_map(SEVEN_NODE_TREE).distance("c", "z")
    with pytest.raises(ValueError, match="root"):
        hierarchical_recall([0], [1], IsAHierarchy.from_parent_map(SEVEN_NODE_TREE), ["c", "r"])


# -- HierarCaps ----------------------------------------------------------------------------------------


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


# -- detection with ground-truth boxes -----------------------------------------------------------------


def grid_boxes(count):
    """Disjoint 10x10 boxes on a 20-pixel grid, so a box overlaps only itself."""
    return np.array([[20.0 * (i % 10), 20.0 * (i // 10), 10.0, 10.0] for i in range(count)])


def one_per_box(image_ids, boxes, categories, scores):
    """COCO-format detections: box i called categories[i] with scores[i]."""
    return [{"image_id": int(i), "category_id": int(c), "bbox": list(map(float, b)), "score": float(s)}
            for i, b, c, s in zip(image_ids, boxes, categories, scores)]


def test_detection_ap_all_correct_is_100():
    categories = np.array([1, 2, 3, 1, 2, 3, 1])
    image_ids = np.array([7, 7, 7, 8, 8, 9, 9])
    boxes = grid_boxes(7)
    got = coco_box_ap(image_ids, boxes, categories, one_per_box(image_ids, boxes, categories, np.full(7, 0.5)),
                      [1, 2, 3])
    assert got == pytest.approx({"ap": 100.0, "ap50": 100.0})


def test_detection_ap_hand_worked():
    # One category of interest (1) with two GT boxes. Box 0 is found (score 0.9); box 1 is called 2.
    # Precision is 1 up to recall 1/2 and recall never exceeds 1/2: 101-point AP = 51 / 101.
    boxes = grid_boxes(2)
    got = coco_box_ap([1, 2], boxes, [1, 1], one_per_box([1, 2], boxes, [1, 2], [0.9, 0.8]), [1])
    assert got["ap"] == pytest.approx(100 * 51 / 101, abs=1e-6)
    # A box of category 2 called 1 with a higher score than the correct one: precision 1/2 at every
    # recall, AP = 50. Category 2 is not evaluated.
    got = coco_box_ap([1, 1], boxes, [2, 1], one_per_box([1, 1], boxes, [1, 1], [0.9, 0.8]), [1])
    assert got["ap"] == pytest.approx(50.0, abs=1e-6)


def test_detection_ap_and_ap50_differ_on_overlapping_ground_truth():
    # GT box A (category 1) and box B (category 2) overlap at IoU 80/120 = 2/3. The detection on B's box
    # called 1 scores first; at IoU thresholds .50-.65 it matches A (precision 1 at recall 1), above them
    # it is a false positive ahead of the true one (precision 1/2): AP50 = 100, AP = (4 * 100 + 6 * 50) / 10.
    boxes = np.array([[0.0, 0.0, 10.0, 10.0], [2.0, 0.0, 10.0, 10.0]])
    detections = one_per_box([1, 1], boxes, [1, 1], [0.8, 0.9])
    got = coco_box_ap([1, 1], boxes, [1, 2], detections, [1])
    assert got == pytest.approx({"ap": 70.0, "ap50": 100.0})
    # pycocotools on the same case written as files-to-be: the oracle agrees.
    truth = COCO()
    truth.dataset = {"images": [{"id": 1}], "categories": [{"id": 1}, {"id": 2}],
                     "annotations": [{"id": n + 1, "image_id": 1, "category_id": c, "bbox": list(b), "area": 100.0,
                                      "iscrowd": 0} for n, (c, b) in enumerate(zip([1, 2], boxes.tolist()))]}
    with contextlib.redirect_stdout(io.StringIO()):
        truth.createIndex()
        evaluation = COCOeval(truth, truth.loadRes(detections), iouType="bbox")
        evaluation.params.catIds = [1]
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    assert got == pytest.approx({"ap": 100 * evaluation.stats[0], "ap50": 100 * evaluation.stats[1]})


def test_all_class_detections_hand_worked():
    # Boxes A and B overlap at IoU 2/3 (> 0.5), C is apart; categories 11, 12, 13.
    boxes = np.array([[0.0, 0.0, 10.0, 10.0], [2.0, 0.0, 10.0, 10.0], [30.0, 30.0, 10.0, 10.0]])
    probabilities = np.array([[0.70, 0.29, 0.01], [0.60, 0.3995, 0.0005], [0.0008, 0.0992, 0.90]])
    # Threshold 0.001 drops (B, 13) and (C, 11). NMS per category: 11 keeps A over B; 12 keeps B over A
    # (B scores higher), and C (apart); 13 keeps C and A. Sorted by score.
    expected = [(2, 13, 0.90), (0, 11, 0.70), (1, 12, 0.3995), (2, 12, 0.0992), (0, 13, 0.01)]
    got = all_class_detections([5, 5, 5], boxes, probabilities, [11, 12, 13])
    assert [(d["category_id"], d["score"]) for d in got] == [(c, s) for _, c, s in expected]
    assert [d["bbox"] for d in got] == [boxes[b].tolist() for b, _, _ in expected]
    assert {d["image_id"] for d in got} == {5}
    # At most 4 per image: the lowest goes. Images are handled apart: the same boxes in another image
    # do not suppress these.
    got = all_class_detections([5, 5, 5, 6, 6, 6], np.concatenate([boxes, boxes]),
                               np.concatenate([probabilities, probabilities]), [11, 12, 13], max_per_image=4)
    assert [(d["image_id"], d["category_id"], d["score"]) for d in got] == [
        (i, c, s) for i in (5, 6) for _, c, s in expected[:4]]


def brute_force_ap(true_categories, pred_categories, scores, category_ids):
    """101-point interpolated AP (COCO) when each detection's box overlaps only its own GT box."""
    recall_thresholds = np.linspace(0, 1, 101)
    aps = []
    for category in category_ids:
        num_gt = int(np.sum(true_categories == category))
        if num_gt == 0:
            continue
        chosen = np.flatnonzero(pred_categories == category)
        chosen = chosen[np.argsort(-scores[chosen], kind="stable")]
        tp = np.cumsum(true_categories[chosen] == category)
        recall = tp / num_gt
        precision = tp / np.arange(1, len(chosen) + 1)
        envelope = np.maximum.accumulate(precision[::-1])[::-1] if len(chosen) else precision
        at = np.searchsorted(recall, recall_thresholds, side="left")
        aps.append(np.mean([envelope[i] if i < len(envelope) else 0.0 for i in at]))
    return 100.0 * float(np.mean(aps))


def test_detection_ap_matches_brute_force(rng):
    for _ in range(3):
        count = 80
        true_categories = rng.integers(1, 6, size=count)
        pred_categories = np.where(rng.random(count) < 0.6, true_categories, rng.integers(1, 6, size=count))
        scores = rng.random(count)
        image_ids = rng.integers(0, 4, size=count)
        novel = [1, 3, 4]
        boxes = grid_boxes(count)
        got = coco_box_ap(image_ids, boxes, true_categories,
                          one_per_box(image_ids, boxes, pred_categories, scores), novel)
        expected = brute_force_ap(true_categories, pred_categories, scores, novel)
        assert got["ap"] == pytest.approx(expected, abs=1e-6)
        assert got["ap50"] == pytest.approx(expected, abs=1e-6)


def test_detection_ap_rejects_nan_boxes_and_missing_categories():
    boxes = grid_boxes(2)
    boxes[1, 2] = np.nan
    with pytest.raises(NonFiniteEmbeddingError, match="boxes"):
        coco_box_ap([1, 1], boxes, [1, 1], [], [1])
    with pytest.raises(NonFiniteEmbeddingError, match="probabilities"):
        all_class_detections([1], grid_boxes(1), [[0.5, float("nan")]], [1, 2])
    with pytest.raises(ValueError, match="no ground-truth box"):
        coco_box_ap([1, 1], grid_boxes(2), [1, 1], [], [5])


# -- compositional benchmarks --------------------------------------------------------------------------


def test_vg_attribution_macro_accuracy(rng):
    pair_ids = np.array(["red_blue"] * 30 + ["old_new"] * 25 + ["big_small"] * 24)
    correct = np.concatenate([np.arange(30) < 12, np.arange(25) < 20, np.ones(24, dtype=bool)])
    # big_small has 24 < 25 samples and is dropped: (12/30 + 20/25) / 2 = 60 %.
    assert vg_attribution_macro_accuracy(correct, pair_ids) == pytest.approx(60.0, abs=1e-9)
    assert vg_attribution_macro_accuracy(correct, pair_ids, min_count=1) == pytest.approx(
        100 * (12 / 30 + 20 / 25 + 1) / 3, abs=1e-9
    )
    # Random case against a pandas-free brute force.
    pair_ids = rng.integers(0, 12, size=600)
    correct = rng.random(600) < 0.7
    groups = [g for g in set(pair_ids.tolist()) if np.sum(pair_ids == g) >= 50]
    expected = 100 * np.mean([correct[pair_ids == g].mean() for g in groups])
    assert vg_attribution_macro_accuracy(torch.as_tensor(correct), pair_ids, min_count=50) == pytest.approx(
        expected, abs=1e-6
    )


def test_itc_accuracy_counts_ties_as_wrong():
    assert itc_accuracy([0.9, 0.2, 0.5, 0.7], [0.1, 0.3, 0.5, 0.6]) == pytest.approx(50.0)
    with pytest.raises(NonFiniteEmbeddingError):
        itc_accuracy([0.9, float("inf")], [0.1, 0.3])


# -- linear probe --------------------------------------------------------------------------------------


def test_linear_probe_c_search_follows_meru_protocol(rng):
    centers = rng.normal(scale=1.5, size=(3, 5))

    def split(n):
        y = rng.integers(0, 3, size=n)
        return centers[y] + rng.normal(size=(n, 5)), y

    train, val, test = split(60), split(45), split(45)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = linear_probe_c_search(train, val, test)

        def val_accuracy(cost):
            model = LogisticRegression(C=cost, random_state=0, max_iter=1000).fit(*train)
            return 100 * balanced_accuracy_score(val[1], model.predict(val[0]))

        # Coarse sweep: the 7 decades, each scored independently with sklearn.
        costs = [c for c, _ in result.trials]
        assert costs[:7] == [1e-6, 1e-4, 1e-2, 1.0, 1e2, 1e4, 1e6]
        for cost, accuracy in result.trials:
            assert accuracy == pytest.approx(val_accuracy(cost), abs=1e-6)
        # Refinement: 4 rounds around the best so far with delta 10, 10^.5, 10^.25, 10^.125.
        assert len(costs) == 15
        best = None
        best_accuracy = -1.0
        for cost, accuracy in result.trials[:7]:
            if accuracy > best_accuracy:
                best, best_accuracy = cost, accuracy
        for step in range(4):
            delta = 10 ** (0.5**step)
            left, right = result.trials[7 + 2 * step], result.trials[8 + 2 * step]
            assert left[0] == pytest.approx(best / delta) and right[0] == pytest.approx(best * delta)
            for cost, accuracy in (left, right):
                if accuracy > best_accuracy:
                    best, best_accuracy = cost, accuracy
        assert result.best_c == best and result.val_accuracy == pytest.approx(best_accuracy)
        final = LogisticRegression(C=best, random_state=0, max_iter=1000).fit(
            np.concatenate([train[0], val[0]]), np.concatenate([train[1], val[1]])
        )
    assert result.test_accuracy == pytest.approx(100 * balanced_accuracy_score(test[1], final.predict(test[0])), abs=1e-6)
    assert result.test_accuracy > 60  # separable blobs: the probe must learn something


def test_linear_probe_rejects_nan_features(rng):
    x, y = rng.normal(size=(10, 3)), np.arange(10) % 2
    bad = x.copy()
    bad[4, 1] = math.nan
    with pytest.raises(NonFiniteEmbeddingError, match="val features.*row 4"):
        linear_probe_c_search((x, y), (bad, y), (x, y))
