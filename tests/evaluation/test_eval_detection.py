"""Zero-shot detection with ground-truth boxes: AP on the novel categories against pycocotools run on the
written instances file with all-category detections built from per-crop scoring by hand; NaN refusal."""

import contextlib
import io

import pytest
import torch
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from helpers.eval_sets import NAMES, _instances
from helpers.evaluation import SIZE, context, embed_one_by_one, nan_images
from hypvl.data.formats.coco_instances import BANSAL_NOVEL_CATEGORIES, COCO_CATEGORY_IDS
from hypvl.data.formats.imagefolder import load_image
from hypvl.data.transforms import squeeze
from hypvl.evaluate import detection
from hypvl.evaluate.metrics.checks import NonFiniteEmbeddingError

TEMPLATES = ["a photo of a {}.", "itap of a {}."]


@pytest.mark.parametrize("method", ["clip", "meru"])
def test_ap_matches_pycocotools_on_hand_built_detections(tmp_path, monkeypatch, method):
    path, images = _instances(tmp_path)
    ctx = context(method, tmp_path)
    model = ctx.model
    rows = [(im, b) for im in images for b in im.boxes if not b.iscrowd]
    crops = [load_image(im.image).crop((int(b.bbox[0]), int(b.bbox[1]), int(-(-(b.bbox[0] + b.bbox[2]) // 1)),
                                        int(-(-(b.bbox[1] + b.bbox[3]) // 1)))) for im, b in rows]
    crop_embeddings = embed_one_by_one(model, crops, lambda c: squeeze(c, SIZE))
    # A random tiny model puts every crop in one class; to make AP informative, the embedding of each
    # category with boxes is replaced by its first crop's (so some crops are classified right, some not).
    classes = detection.class_embeddings(model, ctx.tokenizer, list(NAMES), TEMPLATES, 8, "x").clone()
    for i, (_, box) in reversed(list(enumerate(rows))):
        classes[[COCO_CATEGORY_IDS[n] for n in NAMES].index(box.category_id)] = crop_embeddings[i]
    monkeypatch.setattr(detection, "class_embeddings", lambda *args: classes)
    result = detection.evaluate_detection(ctx, path, TEMPLATES)
    with torch.no_grad():
        probs = (model.logit_scale.exp() * model.similarity(crop_embeddings, classes)).softmax(1)
    novel = {COCO_CATEGORY_IDS[n] for n in BANSAL_NOVEL_CATEGORIES}
    # Every (box, category) above 0.001 is a candidate; no two boxes of an image overlap by IoU > 0.5
    # (their offsets keep the overlaps small), so NMS keeps all and each image keeps its best 100.
    ious = [_iou(a.bbox, b.bbox) for im in images for a in im.boxes[:3] for b in im.boxes[:3] if a is not b]
    assert max(ious) < 0.5
    detections = []
    for image in images:
        candidates = [(float(p[j]), {"image_id": im.image_id, "category_id": COCO_CATEGORY_IDS[NAMES[j]],
                                     "bbox": list(b.bbox), "score": float(p[j])})
                      for (im, b), p in zip(rows, probs) if im is image for j in range(len(NAMES)) if p[j] > 0.001]
        detections += [d for _, d in sorted(candidates, key=lambda c: -c[0])[:100]]
    assert len(detections) > 12  # boxes are credited for more than their argmax category
    with contextlib.redirect_stdout(io.StringIO()):
        truth = COCO(str(path))
        evaluation = COCOeval(truth, truth.loadRes(detections), iouType="bbox")
        evaluation.params.catIds = sorted(novel)
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    assert result.n_samples == 12
    assert 0 < result.metrics["ap"] < 100
    assert result.metrics["ap"] == pytest.approx(100 * evaluation.stats[0], abs=1e-6)
    assert result.metrics["ap50"] == pytest.approx(100 * evaluation.stats[1], abs=1e-6)


def _iou(a, b):
    """IoU of two (x, y, w, h) boxes."""
    width = max(0.0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    height = max(0.0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    return width * height / (a[2] * a[3] + b[2] * b[3] - width * height)


def test_nan_embeddings_are_an_error(tmp_path):
    path, _ = _instances(tmp_path)
    ctx = context("meru", tmp_path)
    nan_images(ctx.model)
    with pytest.raises(NonFiniteEmbeddingError, match="det_coco_novel image embeddings"):
        detection.evaluate_detection(ctx, path, TEMPLATES)
