"""Embedding radius statistics (HyCoCLIP Fig. 5; MERU Sec. 5 on text being nearer the origin than images).

On COCO val2017: whole images and their captions (captions_val2017.json), and every non-crowd box crop of
instances_val2017.json, images and crops squeezed (a public model: its own preprocessing). The radius is the geodesic
distance to the origin of the hyperboloid for MERU and HyCoCLIP (of the Poincaré ball for PoinCLIP), and the norm of
the projected features (before normalisation) for CLIP, whose embeddings all have norm 1. Metrics: mean and standard
deviation of each population.
"""

import torch

from hypvl.data.formats.imagefolder import load_image
from hypvl.runtime.devices import device_encoder
from hypvl.evaluate.context import EvalContext, TaskResult
from hypvl.evaluate.features import encode_images, text_features
from hypvl.evaluate.metrics.checks import check_finite
from hypvl.evaluate.scene import crop_box


def feature_radii(model, feats: torch.Tensor, embed) -> torch.Tensor:
    """(N,) radius of projected features in the model's geometry (`DualEncoder.feature_radius`): distance to the
    origin after `embed`, or the feature norm (CLIP)."""
    out = model.feature_radius(feats, embed)
    check_finite("radii", out)
    return out


@torch.no_grad()
def run(ctx: EvalContext, task: str) -> TaskResult:
    """Task `stats_radius`."""
    from hypvl.data.formats.coco_captions import read_coco_captions
    from hypvl.data.formats.coco_instances import read_coco_instances

    model, size = ctx.model, ctx.image_size
    items = read_coco_captions(ctx.dataset_path("coco_captions"))
    boxes = [(image.image, box.bbox) for image in read_coco_instances(ctx.dataset_path("coco_instances")).images
             for box in image.boxes if not box.iscrowd]
    image_features, device = device_encoder(model, "image_features")
    populations = {
        "image": feature_radii(model, encode_images(image_features, lambda i: load_image(items[i].image), len(items),
                                                    lambda img: model.eval_view(img, size, "squeeze"), ctx.batch_size,
                                                    "stats_radius image features", device), model.embed_image),
        "text": feature_radii(model, text_features(model, ctx.tokenizer, [c for it in items for c in it.captions],
                                                   ctx.batch_size, "stats_radius"), model.embed_text),
        "box": feature_radii(model, encode_images(image_features,
                                                  lambda i: crop_box(load_image(boxes[i][0]), boxes[i][1]), len(boxes),
                                                  lambda img: model.eval_view(img, size, "squeeze"), ctx.batch_size,
                                                  "stats_radius box features", device), model.embed_image),
    }
    metrics = {}
    for name, values in populations.items():
        metrics[f"{name}_radius_mean"] = values.double().mean().item()
        metrics[f"{name}_radius_std"] = values.double().std(unbiased=False).item()
    return TaskResult(metrics, len(items))
