"""HyperLex (Spearman rho of -Xi against scipy, Xi written out for each geometry) and BREEDS (label-pair
recall with 2-fold cross-validated C, as loops over every candidate pair); NaN refusal."""

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from helpers.eval_sets import LEAVES, SUPER, _breeds
from helpers.evaluation import SIZE, context, embed_one_by_one, embed_texts_one_by_one, nan_images
from hypvl.data.formats.hyperlex import HyperLexPair, write_hyperlex
from hypvl.data.formats.imagefolder import load_image, read_imagefolder
from hypvl.data.transforms import resize_center_crop
from hypvl.evaluate import lexical
from hypvl.evaluate.metrics.checks import NonFiniteEmbeddingError

PAIRS = [("dog", "animal", "N", 5.8), ("cat", "animal", "N", 5.5), ("car", "vehicle", "N", 5.9), ("animal", "dog", "N", 1.2),
         ("run", "move", "V", 4.7), ("tree", "plant", "N", 5.1), ("car", "animal", "N", 0.2), ("walk", "move", "V", 4.0),
         ("rose", "flower", "N", 5.6), ("flower", "rose", "N", 2.0), ("boat", "vehicle", "N", 4.4)]


def _angles(model, general: torch.Tensor, specific: torch.Tensor, root) -> np.ndarray:
    """Xi(general, specific): the Euclidean exterior angle, or MERU's Eq. 11 written out."""
    g, s = general.double().numpy(), specific.double().numpy()
    if root is None:
        c = float(model.curvature.detach())
        gt, st = np.sqrt(1 / c + (g ** 2).sum(1)), np.sqrt(1 / c + (s ** 2).sum(1))
        inner = c * ((g * s).sum(1) - gt * st)
        value = (st + inner * gt) / (np.linalg.norm(g, axis=1) * np.sqrt(inner ** 2 - 1))
        return np.arccos(np.clip(value, -1, 1))
    r = root.double().numpy()
    u, v = g - r, s - g
    return np.arccos(np.clip((u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1), -1, 1))


def _root(ctx):
    return None if ctx.model.geometry == "lorentz" else embed_texts_one_by_one(ctx.model, ctx.tokenizer, [""])[0]


@pytest.mark.parametrize("method", ["clip", "meru"])
def test_hyperlex_rho_matches_scipy(tmp_path, method):
    write_hyperlex(tmp_path / "hyperlex.txt", [HyperLexPair(a, b, pos, "hyp-1", s, round(s * 10 / 6, 2), 0.5, (5, 6))
                                               for a, b, pos, s in PAIRS])
    ctx = context(method, tmp_path, {"hyperlex": "hyperlex.txt"})
    result = lexical.run(ctx, "hyperlex")
    emb = {w: e for w, e in zip(*(lambda ws: (ws, embed_texts_one_by_one(ctx.model, ctx.tokenizer,
                                                                          [f"a picture of a {w}" for w in ws])))(
        sorted({w for p in PAIRS for w in p[:2]})))}
    angles = _angles(ctx.model, torch.stack([emb[p[1]] for p in PAIRS]), torch.stack([emb[p[0]] for p in PAIRS]),
                     _root(ctx))
    scores = [p[3] for p in PAIRS]
    nouns = [i for i, p in enumerate(PAIRS) if p[2] == "N"]
    assert result.n_samples == len(PAIRS)
    assert result.metrics["rho_all"] == pytest.approx(spearmanr(-angles, scores).statistic, abs=1e-6)
    assert result.metrics["rho_n"] == pytest.approx(spearmanr(-angles[nouns], np.array(scores)[nouns]).statistic, abs=1e-6)


def _breeds_oracle(ctx, tmp_path, supers: list[str], prompts, sign: float = -1.0) -> dict[int, float]:
    """Every candidate pair scored in a loop; C picked on each fold, scored on the other."""
    model = ctx.model
    dataset = read_imagefolder(tmp_path / "classification" / "imagenet", "test")
    fine = [c for s in supers for c in SUPER[s]]
    samples = [(p, t) for p, t in dataset.samples if t in fine]
    labels = supers + [LEAVES[c] for c in sorted(fine)]
    with torch.no_grad():
        label_emb = model.ensemble_prompts(torch.stack([model.text_features(ctx.tokenizer([p.format(n) for p in prompts]))
                                                        for n in labels]))
        images = embed_one_by_one(model, [load_image(p) for p, _ in samples], lambda im: resize_center_crop(im, SIZE))
        c = model.similarity(images, label_emb).double().numpy()
        root = _root(ctx)
        if root is None:
            r = (torch.asinh(model.curvature.sqrt() * label_emb.norm(dim=1)) / model.curvature.sqrt()).numpy()
        else:
            r = (label_emb - root).norm(dim=1).numpy()
    pairs = [(x, y) for x in range(len(labels)) for y in range(len(labels)) if x != y and r[x] < r[y]]
    xi = {(x, y): _angles(model, label_emb[[x]], label_emb[[y]], root)[0] for x, y in pairs}
    hits = {}  # (C index, k) -> per-item hits
    for ci, cost in enumerate(np.linspace(0, 0.2, 20)):
        for k in (1, 5):
            row = []
            for n, (_, t) in enumerate(samples):
                truth = (labels.index(next(s for s in supers if t in SUPER[s])), labels.index(LEAVES[t]))
                score = {(x, y): c[n, x] + c[n, y] + sign * cost * xi[(x, y)] for x, y in pairs}
                if truth not in score:
                    row.append(False)
                    continue
                row.append(sum(v >= score[truth] for v in score.values()) - 1 < k)
            hits[ci, k] = np.array(row)
    folds = tuple(fold.numpy() for fold in lexical.breeds_folds(len(samples)))
    out = {}
    for k in (1, 5):
        held = []
        for fit, test in (folds, folds[::-1]):
            best = max(range(20), key=lambda ci: (hits[ci, k][fit].mean(), -ci))
            held.append(hits[best, k][test].mean())
        out[k] = float(np.mean(held))
    return out


@pytest.mark.parametrize("method", ["clip", "meru"])
def test_breeds_recall_matches_a_loop_over_candidate_pairs(tmp_path, method):
    from hypvl.data.catalog import load_prompt_set

    _breeds(tmp_path)
    ctx = context(method, tmp_path, {"breeds": "breeds"})
    result = lexical.run(ctx, "breeds")
    prompts = list(load_prompt_set("clip_imagenet_80"))
    for suffix, sign in (("", -1.0), ("_plus_xi", 1.0)):
        expected = {"all3": _breeds_oracle(ctx, tmp_path, ["animal", "vehicle", "plant"], prompts, sign),
                    "two": _breeds_oracle(ctx, tmp_path, ["animal", "vehicle"], prompts, sign)}
        for k in (1, 5):
            if not suffix:
                for subset, recall in expected.items():
                    assert result.metrics[f"{subset}_r{k}"] == pytest.approx(recall[k], abs=1e-9)
            assert result.metrics[f"r{k}{suffix}"] == pytest.approx(
                (expected["all3"][k] + expected["two"][k]) / 2, abs=1e-9)
    assert result.n_samples == 18 + 12


def test_breeds_prompts_are_clips_80_imagenet_templates():
    from hypvl.data.catalog import load_prompt_set

    prompts = load_prompt_set(lexical.BREEDS_PROMPTS)
    assert len(prompts) == len(set(prompts)) == 80
    assert prompts[0] == "a bad photo of a {}." and prompts[-1] == "a tattoo of the {}."
    assert "itap of my {}." in prompts and "a photo of many {}." in prompts


def test_breeds_both_signs_hand_worked():
    # Labels 0 (general), 1, 2; candidate pairs (0, 1), (0, 2), (1, 2) with Xi 0.1, 1.0, 2.0; the truth is (0, 1).
    # c = (0.5, 0.3, 0.4). C = 0.2: minus sign 0.78, 0.70, 0.30 (truth first); plus sign 0.82, 1.10, 1.10
    # (truth third). C = 0: 0.8, 0.9, 0.7 (truth second) under both signs.
    c = torch.tensor([[0.5, 0.3, 0.4]], dtype=torch.float64)
    angles = torch.zeros(3, 3, dtype=torch.float64)
    angles[0, 1], angles[0, 2], angles[1, 2] = 0.1, 1.0, 2.0
    general, specific, truth = torch.tensor([0, 0, 1]), torch.tensor([1, 2, 2]), torch.tensor([0])
    hits = {(sign, cost): lexical.pair_hits(c, angles, general, specific, truth, cost, (1, 2, 3), sign)
            for sign in (-1.0, 1.0) for cost in (0.0, 0.2)}
    ranks = {key: next(k for k in (1, 2, 3) if value[k].item()) for key, value in hits.items()}
    assert ranks == {(-1.0, 0.0): 2, (-1.0, 0.2): 1, (1.0, 0.0): 2, (1.0, 0.2): 3}
    # Two such items, C from {0, 0.2} on one, scored on the other: the minus sign picks 0.2 (R@1 = 1); the
    # plus sign misses R@1 at every C (0) and finds the pair within 5 at every C (1).
    two = c.expand(2, 3)
    minus = lexical.cross_validated_recall(two, angles, general, specific, truth.expand(2), (0.0, 0.2), (1, 5), -1.0)
    plus = lexical.cross_validated_recall(two, angles, general, specific, truth.expand(2), (0.0, 0.2), (1, 5), 1.0)
    assert minus == {1: 1.0, 5: 1.0} and plus == {1: 0.0, 5: 1.0}


def test_breeds_folds_are_a_seeded_random_split_into_equal_halves():
    """App. B.6 splits the test items into two equally sized folds. The ImageNet test set is stored class by class,
    so its first and second halves would be nearly class-disjoint: the folds must mix the items of both halves."""
    for count in (2, 7, 100, 1121):
        first, second = lexical.breeds_folds(count)
        assert (len(first), len(second)) == (count // 2, count - count // 2)
        assert sorted(torch.cat([first, second]).tolist()) == list(range(count))
        assert all(torch.equal(a, b) for a, b in zip(lexical.breeds_folds(count), (first, second)))  # seeded
    first, second = lexical.breeds_folds(100)
    for fold in (first, second):  # two classes stored in turn (items 0-49, 50-99): each fold holds both, about equally
        assert 15 <= int((fold < 50).sum()) <= 35
    assert not torch.equal(lexical.breeds_folds(100, seed=1)[0], first)
    with pytest.raises(ValueError, match="at least two items"):
        lexical.breeds_folds(1)


def test_nan_embeddings_are_an_error(tmp_path):
    _breeds(tmp_path)
    ctx = context("clip", tmp_path, {"breeds": "breeds"})
    nan_images(ctx.model)
    with pytest.raises(NonFiniteEmbeddingError, match="breeds image embeddings"):
        lexical.run(ctx, "breeds")


def _single_prompt_oracle(ctx, tmp_path, supers: list[str], prompt: str) -> dict[int, float]:
    """Every ordered pair of distinct labels written into the prompt (specific label first) and embedded one by one;
    an item's recall@k counts the pairs scoring at least its true pair's."""
    model = ctx.model
    dataset = read_imagefolder(tmp_path / "classification" / "imagenet", "test")
    fine = [c for s in supers for c in SUPER[s]]
    samples = [(p, t) for p, t in dataset.samples if t in fine]
    labels = supers + [LEAVES[c] for c in sorted(fine)]
    pairs = [(x, y) for x in labels for y in labels if x != y]
    with torch.no_grad():
        texts = embed_texts_one_by_one(model, ctx.tokenizer, [prompt.format(y, x) for x, y in pairs])
        images = embed_one_by_one(model, [load_image(p) for p, _ in samples], lambda im: resize_center_crop(im, SIZE))
        scores = model.similarity(images, texts).double().numpy()
    out = {}
    for k in (1, 5):
        hits = []
        for n, (_, t) in enumerate(samples):
            truth = pairs.index((next(s for s in supers if t in SUPER[s]), LEAVES[t]))
            hits.append((scores[n] >= scores[n, truth]).sum() - 1 < k)
        out[k] = float(np.mean(hits))
    return out


@pytest.mark.parametrize("method", ["clip", "meru"])
def test_single_prompt_baseline_matches_a_loop_over_label_pairs(tmp_path, method, monkeypatch):
    from hypvl.tasks import BREEDS_SINGLE_PROMPTS

    _breeds(tmp_path)
    ctx = context(method, tmp_path, {"breeds": "breeds"})
    calls = []
    embed = lexical.image_embeddings
    monkeypatch.setattr(lexical, "image_embeddings", lambda *args: calls.append(args) or embed(*args))
    lexical.run(ctx, "breeds")
    for key in ("of_type", "picture_which_is"):
        result = lexical.run(ctx, f"breeds_prompt_{key}")
        prompt = BREEDS_SINGLE_PROMPTS[key]
        expected = {"all3": _single_prompt_oracle(ctx, tmp_path, ["animal", "vehicle", "plant"], prompt),
                    "two": _single_prompt_oracle(ctx, tmp_path, ["animal", "vehicle"], prompt)}
        for k in (1, 5):
            for subset, recall in expected.items():
                assert result.metrics[f"{subset}_r{k}"] == pytest.approx(recall[k], abs=1e-9)
            assert result.metrics[f"r{k}"] == pytest.approx((expected["all3"][k] + expected["two"][k]) / 2, abs=1e-9)
        assert result.n_samples == 18 + 12
    assert len(calls) == 1  # BREEDS and its baselines embed the ImageNet test images once per evaluation


def test_hits_at_k_counts_ties_against_the_truth():
    # item 0: truth 1 scores 0.5, one candidate above and one equal -> rank 3; item 1: truth not a candidate
    scores = torch.tensor([[0.9, 0.5, 0.5, 0.1], [0.0, 0.1, 0.2, 0.3]])
    hits = lexical.hits_at_k(scores, torch.tensor([1, -1]), (1, 2, 3))
    assert [hits[k].tolist() for k in (1, 2, 3)] == [[False, False], [False, False], [True, False]]
