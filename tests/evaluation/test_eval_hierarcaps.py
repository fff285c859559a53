"""HierarCaps P, R, tau_d (code and paper readings) against a per-image loop over radius levels written from
the paper's App. B.5 and the released eval.py (each distinct image once, against the captions of every row that
shows it), with scipy's Kendall tau; the root of each geometry; NaN refusal."""

import numpy as np
import pytest
import torch
from scipy.stats import kendalltau

from helpers.eval_sets import _write
from helpers.evaluation import SIZE, context, embed_one_by_one, embed_texts_one_by_one, nan_images
from hypvl.data.formats.imagefolder import load_image
from hypvl.data.transforms import resize_center_crop
from hypvl.evaluate import hierarcaps
from hypvl.evaluate.metrics.checks import NonFiniteEmbeddingError


def _oracle(ctx, items, steps=50) -> dict[str, float]:
    model = ctx.model
    texts = sorted({c for it in items for c in it.captions})
    embeds = embed_texts_one_by_one(model, ctx.tokenizer, texts)
    with torch.no_grad():
        if model.geometry == "lorentz":  # geodesic distance to the origin, written out
            c = model.curvature
            radius = (torch.asinh(c.sqrt() * embeds.norm(dim=1)) / c.sqrt()).numpy()
        else:  # distance to the empty-string embedding
            radius = (embeds - embed_texts_one_by_one(model, ctx.tokenizer, [""])[0]).norm(dim=1).numpy()
        files = list(dict.fromkeys(it.image for it in items))
        images = embed_one_by_one(model, [load_image(f) for f in files], lambda im: resize_center_crop(im, SIZE))
        sim = model.similarity(images, embeds).numpy()
    out = {}
    for variant in ("code", "paper"):
        precision, recall = [], []
        for i, file in enumerate(files):
            gts = [it.captions for it in items if it.image == file]
            top = radius[sim[i].argmax()]
            levels = np.linspace(radius.min(), radius.max(), steps) if variant == "code" else np.linspace(0, top, steps)
            preds = []
            for level in levels:
                candidates = [j for j in range(len(texts)) if radius[j] <= level]
                if candidates:
                    best = texts[max(candidates, key=lambda j: sim[i, j])]
                    if not preds or preds[-1] != best:
                        preds.append(best)
            if variant == "paper":
                preds = preds[1:]
            precision.append(len(set(preds) & {c for gt in gts for c in gt}) / max(1, len(set(preds))))
            recall.append(np.mean([any(gt[tier] in preds for gt in gts) for tier in range(4)]))
        suffix = "" if variant == "code" else "_paper"
        out[f"precision{suffix}"] = float(np.mean(precision))
        out[f"recall{suffix}"] = float(np.mean(recall))
    taus_code, taus_paper = [], []
    for item in items:
        r = [radius[texts.index(c)] for c in item.captions]
        taus_code.append(kendalltau(np.argsort(r), [1, 2, 3, 4]).statistic)
        taus_paper.append(kendalltau(r, [1, 2, 3, 4]).statistic)
    out["kendall_tau"], out["kendall_tau_paper"] = float(np.mean(taus_code)), float(np.mean(taus_paper))
    return out


@pytest.mark.parametrize("method, shared", [("clip", False), ("meru", False), ("clip", True)])
def test_precision_recall_tau_match_the_per_image_loop(tmp_path, method, shared):
    items = _write(tmp_path, shared)
    ctx = context(method, tmp_path, {"hierarcaps_test": "hc/data/hierarcaps_test.csv"})
    result = hierarcaps.run(ctx, "hierarcaps")
    assert result.n_samples == len(items) == (7 if shared else 5)
    assert result.metrics == pytest.approx(_oracle(ctx, items), abs=1e-6)


def test_nan_embeddings_are_an_error(tmp_path):
    _write(tmp_path)
    ctx = context("clip", tmp_path, {"hierarcaps_test": "hc/data/hierarcaps_test.csv"})
    nan_images(ctx.model)
    with pytest.raises(NonFiniteEmbeddingError, match="hierarcaps image embeddings"):
        hierarcaps.run(ctx, "hierarcaps")
