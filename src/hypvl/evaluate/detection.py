"""Zero-shot detection with ground-truth boxes (HyCoCLIP Table 3, RegionCLIP's protocol).

Every non-crowd COCO val2017 box of the 65 categories of the Bansal et al. split becomes a proposal.
As RegionCLIP's inference, each proposal is scored against all 65 categories (the generalized setting),
every (box, category) above a score of 0.001 is a candidate, per-category NMS at IoU 0.5 and the best 100
per image make the detections (`metrics.all_class_detections`), so a box still earns credit for its true
category when another one scores higher. COCO AP50 (`ap50`, the number RegionCLIP reports and HyCoCLIP
prints as "AP") and AP@[.5:.95] (`ap`) on the 17 novel categories come from pycocotools; a detection on
one ground-truth box can match another box it overlaps, so the two differ where boxes overlap.

HyCoCLIP released no detection code; how a box is scored is the suite's own choice: the box is cropped from its image
and squeezed to the input size (a public model: its own preprocessing), scored against one prompt-ensemble embedding
per category (the ImageNet prompts of the catalog, filled with the category name; the method's own ensembling and
similarity), and its score for a category is the softmax probability under the model's learned logit scale.
"""

from pathlib import Path

import torch

from hypvl.data.formats.imagefolder import load_image
from hypvl.errors import InputError
from hypvl.evaluate.context import EvalContext, TaskResult
from hypvl.evaluate.features import image_embeddings
from hypvl.evaluate.metrics.detection import all_class_detections, coco_box_ap
from hypvl.evaluate.scene import crop_box
from hypvl.evaluate.zeroshot import class_embeddings


@torch.no_grad()
def evaluate_detection(ctx: EvalContext, path: Path, templates: list[str], name: str = "det_coco_novel") -> TaskResult:
    """`ap50` and `ap` (percent) on the novel categories; n_samples = number of boxes scored."""
    from hypvl.data.formats.coco_instances import read_coco_instances, zero_shot_split

    instances = read_coco_instances(path)
    base, novel = zero_shot_split(instances, path)
    category_ids = [*base, *novel]
    names = {category.id: category.name for category in instances.categories}
    rows = [(image, box) for image in instances.images for box in image.boxes
            if not box.iscrowd and box.category_id in category_ids]
    if not any(box.category_id in novel for _, box in rows):
        raise InputError(f"{path}: no non-crowd box of a novel category")
    classes = class_embeddings(ctx.model, ctx.tokenizer, [names[c] for c in category_ids], templates,
                               ctx.batch_size, name)
    crops = image_embeddings(ctx.model, lambda i: crop_box(load_image(rows[i][0].image), rows[i][1].bbox), len(rows),
                             lambda img: ctx.model.eval_view(img, ctx.image_size, "squeeze"), ctx.batch_size, name)
    probabilities = (ctx.model.logit_scale.exp() * ctx.model.similarity(crops, classes)).softmax(dim=1)
    image_ids = [image.image_id for image, _ in rows]
    boxes = torch.tensor([box.bbox for _, box in rows])
    detections = all_class_detections(image_ids, boxes, probabilities, category_ids)
    metrics = coco_box_ap(image_ids, boxes, [box.category_id for _, box in rows], detections, novel)
    return TaskResult(metrics, len(rows))


def run(ctx: EvalContext, task: str) -> TaskResult:
    """Task `det_coco_novel` on instances_val2017.json."""
    return evaluate_detection(ctx, ctx.dataset_path("coco_instances"), ctx.templates("imagenet"))
