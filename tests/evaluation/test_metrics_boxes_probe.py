"""Metrics against independent oracles: pycocotools for detection AP, scikit-learn for the linear probe's C search,
and hand-worked cases for the compositional benchmarks."""

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
from sklearn.metrics import balanced_accuracy_score

from hypvl.evaluate.metrics.checks import NonFiniteEmbeddingError
from hypvl.evaluate.metrics.classification import linear_probe_c_search
from hypvl.evaluate.metrics.compositional import itc_accuracy, vg_attribution_macro_accuracy
from hypvl.evaluate.metrics.detection import all_class_detections, coco_box_ap

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
