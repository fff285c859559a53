"""Zero-shot detection with ground-truth boxes as proposals (HyCoCLIP Table 3, RegionCLIP's protocol): all-class
detections, and their COCO box AP by pycocotools."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence

import numpy as np
import torch

from hypvl.errors import require
from hypvl.evaluate.metrics.checks import check_finite

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
