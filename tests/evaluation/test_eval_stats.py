"""stats_radius: mean/std radius of images, captions and box crops against the radius written out for each
geometry (geodesic distance to the origin; CLIP: projected-feature norm); NaN refusal."""

import pytest
import torch

from helpers.eval_sets import DATASETS, _coco
from helpers.evaluation import SIZE, context, nan_images
from hypvl.data.formats.imagefolder import load_image
from hypvl.data.transforms import squeeze, to_tensor_batch
from hypvl.evaluate import stats
from hypvl.evaluate.metrics.checks import NonFiniteEmbeddingError


@pytest.mark.parametrize("method", ["clip", "meru"])
def test_radius_statistics_match_hand_computation(tmp_path, method):
    items, images = _coco(tmp_path)
    ctx = context(method, tmp_path, DATASETS)
    result = stats.run(ctx, "stats_radius")
    model = ctx.model

    def radius(feats, alpha):
        if model.geometry != "lorentz":
            return feats.norm(dim=1)
        c = model.curvature
        x = feats * alpha.exp()
        space = torch.sinh(c.sqrt() * x.norm(dim=1, keepdim=True)) * x / (c.sqrt() * x.norm(dim=1, keepdim=True))
        return torch.asinh(c.sqrt() * space.norm(dim=1)) / c.sqrt()

    with torch.no_grad():
        whole = model.image_features(to_tensor_batch([squeeze(load_image(it.image), SIZE) for it in items]))
        crops = model.image_features(to_tensor_batch([squeeze(load_image(im.image).crop((1, 2, 11 + n, 10)), SIZE)
                                                      for n, im in enumerate(images)]))
        texts = model.text_features(ctx.tokenizer([c for it in items for c in it.captions]))
        alpha_img = getattr(model, "visual_alpha", None)
        alpha_txt = getattr(model, "textual_alpha", None)
        expected = {"image": radius(whole, alpha_img), "text": radius(texts, alpha_txt), "box": radius(crops, alpha_img)}
    for name, values in expected.items():
        assert result.metrics[f"{name}_radius_mean"] == pytest.approx(values.double().mean().item(), abs=1e-5)
        assert result.metrics[f"{name}_radius_std"] == pytest.approx(values.double().std(unbiased=False).item(), abs=1e-5)
    assert result.n_samples == 5


def test_nan_embeddings_are_an_error(tmp_path):
    _coco(tmp_path)
    ctx = context("meru", tmp_path, DATASETS)
    nan_images(ctx.model)
    with pytest.raises(NonFiniteEmbeddingError, match="stats_radius image features"):
        stats.run(ctx, "stats_radius")
