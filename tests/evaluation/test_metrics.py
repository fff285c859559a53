"""Metrics against independent oracles: scikit-learn, brute force and hand-worked cases (detection, the
compositional benchmarks and the linear probe: test_metrics_boxes_probe.py; HierarCaps':
test_metrics_hierarcaps.py)."""

import warnings

import numpy as np
import pytest
import torch
from sklearn.metrics import accuracy_score, balanced_accuracy_score, recall_score, top_k_accuracy_score

from hypvl.errors import InputError
from hypvl.evaluate.hierarchy import IsAHierarchy
from hypvl.evaluate.metrics.checks import NonFiniteEmbeddingError, check_finite
from hypvl.evaluate.metrics.classification import mean_per_class_accuracy, top1_accuracy, top_k_accuracy
from hypvl.evaluate.metrics.hierarchical import (
    hierarchical_jaccard,
    hierarchical_precision,
    hierarchical_recall,
    lca_error,
    tree_induced_error,
)
from hypvl.evaluate.metrics.retrieval import recall_at_k


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


def test_top_k_accuracy_matches_sklearn_and_breaks_ties_as_argmax(rng):
    for k in (1, 2, 5):
        target = rng.integers(0, 7, size=300)
        scores = rng.normal(size=(300, 7)) + 1.5 * np.eye(7)[target] * rng.random((300, 1))
        expected = 100 * top_k_accuracy_score(target, scores, k=k, labels=np.arange(7))
        assert top_k_accuracy(torch.as_tensor(scores), target, k) == pytest.approx(expected, abs=1e-9)
    # all scores tied: argmax picks class 0, so the top-2 are classes 0 and 1 (worked by hand: 2 of 4 samples)
    tied = torch.zeros(4, 3)
    assert top_k_accuracy(tied, [0, 1, 2, 2], 2) == 50.0
    assert top_k_accuracy(tied, [0, 1, 2, 2], 1) == top1_accuracy(tied, torch.tensor([0, 1, 2, 2])) == 25.0
    with pytest.raises(ValueError, match="1 <= k <= 3"):
        top_k_accuracy(tied, [0, 1, 2, 2], 5)


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
