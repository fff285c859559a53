"""Every image task views its images through the model's one `eval_view`: on non-square images, our models receive
MERU's and HyCoCLIP's views bitwise (shorter side and centre crop; the squeeze for retrieval and its kin: detection
boxes, radius statistics), and a wrapped public model receives exactly what its own preprocessing gives (the oracle:
the transformers image processor, or open_clip's evaluation transform, called directly). ALIGN's processor (a square
resize, then a centre crop) differs from both of ours, so a task that kept its own transform fails here."""

import ast

import open_clip
import pytest
import torch

from helpers import REPO
from helpers.eval_sets import (
    DATASETS as COCO_DATASETS,
    _attribution,
    _breeds,
    _coco,
    _folder as _probe_folders,
    _instances,
    _items as _captioned,
    _write as _hierarcaps_rows,
)
from helpers.evaluation import SIZE, context, random_image
from helpers.library import OPEN_CLIP_CFG, open_clip_folder, transformers_folder
from hypvl.data.formats.classification_split import read_classification_split
from hypvl.data.formats.coco_captions import write_coco_captions
from hypvl.data.formats.imagefolder import load_image, write_imagefolder
from hypvl.data.transforms import resize_center_crop, squeeze, to_tensor_batch
from hypvl.evaluate import detection, features, hierarcaps, lexical, linprobe, retrieval, scene, stats, zeroshot
from hypvl.evaluate.context import EvalContext
from hypvl.evaluate.scene import crop_box
from hypvl.models.library_import import import_library_model


def _split_images(root, split):
    dataset = read_classification_split(root, split)
    return [dataset.load(i) for i in range(len(dataset))]


def _zero_shot(tmp_path):
    g = torch.Generator().manual_seed(2)
    write_imagefolder(tmp_path / "classification" / "cifar10", "test", ["dog", "car", "rose"],
                      [(i % 3, random_image(g, 26, 18)) for i in range(6)])
    return {}, _split_images(tmp_path / "classification" / "cifar10", "test")


def _hierarcaps(tmp_path):
    files = dict.fromkeys(item.image for item in _hierarcaps_rows(tmp_path, shared=True))
    return {"hierarcaps_test": "hc/data/hierarcaps_test.csv"}, [load_image(f) for f in files]


def _breeds_images(tmp_path):
    _breeds(tmp_path)
    return {"breeds": "breeds"}, _split_images(tmp_path / "classification" / "imagenet", "test")


def _vg_attribution(tmp_path):
    items = _attribution(tmp_path, torch.Generator().manual_seed(1))
    return ({"vg_attribution": "aro/visual_genome_attribution.json"},
            [crop_box(load_image(it.image), it.bbox) for it in items])


def _linear_probe(tmp_path):
    _probe_folders(tmp_path)
    return {}, [image for root, split in (("linear_probe", "train"), ("linear_probe", "val"),
                                          ("classification", "test"))
                for image in _split_images(tmp_path / root / "cifar10", split)]


def _retrieval(tmp_path):
    (tmp_path / "val2017").mkdir()
    items = _captioned(tmp_path / "val2017", count=5)
    write_coco_captions(tmp_path / "annotations" / "captions_val2017.json", items)
    return {"coco_captions": "annotations/captions_val2017.json"}, [load_image(it.image) for it in items]


def _detection(tmp_path):
    _, images = _instances(tmp_path)
    return ({"coco_instances": "coco/annotations/instances_val2017.json"},
            [crop_box(load_image(im.image), box.bbox) for im in images for box in im.boxes if not box.iscrowd])


def _radius_stats(tmp_path):
    items, images = _coco(tmp_path)
    boxes = [crop_box(load_image(im.image), box.bbox) for im in images for box in im.boxes if not box.iscrowd]
    return COCO_DATASETS, [load_image(it.image) for it in items] + boxes


# task -> (data builder: tmp_path -> (eval.datasets, the images in the order the task encodes them), what runs it,
# our models' view); BREEDS: its images alone (the tiny BERT's vocabulary gives every label one embedding, and so
# no candidate pair)
TASKS = {"zs_cifar10": (_zero_shot, zeroshot.run, resize_center_crop),
         "hierarcaps": (_hierarcaps, hierarcaps.run, resize_center_crop),
         "breeds": (_breeds_images, lambda ctx, _: lexical.breeds_data(ctx, ctx.dataset_path("breeds")),
                    resize_center_crop),
         "vg_attribution": (_vg_attribution, scene.run, resize_center_crop),
         "linprobe_cifar10": (_linear_probe, linprobe.run, resize_center_crop),
         "ret_coco": (_retrieval, retrieval.run, squeeze),
         "det_coco_novel": (_detection, detection.run, squeeze),
         "stats_radius": (_radius_stats, stats.run, squeeze)}


def _wrapped(tmp_path, model: str):
    """A wrapped public model and its own preprocessing (PIL images -> the pixels its vision tower takes)."""
    if model == "open_clip":
        library, folder = "open_clip", open_clip_folder(tmp_path)[1]
        transform = open_clip.image_transform(32, is_train=False, mean=OPEN_CLIP_CFG["preprocess_cfg"]["mean"],
                                              std=OPEN_CLIP_CFG["preprocess_cfg"]["std"])

        def own(images):
            return torch.stack([transform(image) for image in images])
    else:
        library, (_, _, processor, folder) = "transformers", transformers_folder(tmp_path, model)

        def own(images):
            return processor(images=images, return_tensors="pt")["pixel_values"]
    return import_library_model(folder, library, "pretrained:test"), own


def _received(monkeypatch, ctx: EvalContext, task: str, run) -> torch.Tensor:
    """The pixels (in [0, 1]) the model's image encoders received while `task` ran, in order."""
    batches, unit_float = [], features.to_unit_float

    def recording(pixels):
        batches.append(unit_float(pixels))
        return batches[-1]

    monkeypatch.setattr(features, "to_unit_float", recording)
    run(ctx, task)
    return torch.cat(batches)


@pytest.mark.parametrize("task", list(TASKS))
@pytest.mark.parametrize("method", ["clip", "meru"])
def test_our_models_see_the_centre_crop_or_the_squeeze(tmp_path, monkeypatch, task, method):
    build, run, view = TASKS[task]
    datasets, images = build(tmp_path)
    ctx = context(method, tmp_path, datasets, vg_attribution_min_count=5)
    received = _received(monkeypatch, ctx, task, run)
    assert torch.equal(received, to_tensor_batch([view(image, SIZE) for image in images]))


@pytest.mark.parametrize("task", list(TASKS))
@pytest.mark.parametrize("model", ["align", "clip", "open_clip"])
def test_a_public_model_sees_its_own_preprocessing_in_every_task(tmp_path, monkeypatch, task, model):
    build, run, _ = TASKS[task]
    datasets, images = build(tmp_path)
    wrapped, own = _wrapped(tmp_path, model)
    config = context("clip", tmp_path, datasets, vg_attribution_min_count=5).config
    received = _received(monkeypatch, EvalContext(wrapped, wrapped.tokenizer, wrapped.image_size, config), task,
                         run)
    expected = own(images)
    assert received.shape == expected.shape and torch.allclose(wrapped.pixels(received), expected, atol=1e-5)
    if model == "align":  # a square resize, then a centre crop: neither of our views
        for view in (resize_center_crop, squeeze):
            ours = wrapped.pixels(to_tensor_batch([view(image, wrapped.image_size) for image in images]))
            assert not torch.allclose(ours, expected, atol=1e-2)


def test_no_evaluation_module_keeps_a_transform_of_its_own():
    """The views are the model's (`DualEncoder.eval_view`): no task imports one from hypvl.data.transforms."""
    views = {"resize_center_crop", "squeeze", "EVAL_VIEWS"}
    found = [f"{path.name}: {alias.name}" for path in sorted((REPO / "src" / "hypvl" / "evaluate").rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.ImportFrom) and node.module == "hypvl.data.transforms"
             for alias in node.names if alias.name in views]
    assert found == []


def test_the_radial_fine_tuning_views_its_images_as_the_model_does(tmp_path, monkeypatch):
    """HierarCaps' CLIP-objective fine-tuning encodes its train images as the authors' code does, through the model's
    own preprocessing (ALIGN's square resize and crop), where our models keep the centre crop."""
    from hypvl.data.formats.images import encode_image
    from hypvl.train.radial import image_embeddings

    g = torch.Generator().manual_seed(3)
    images = [random_image(g, 30, 17), random_image(g, 14, 25)]
    encoded = [encode_image(image, "PNG") for image in images]
    batches = []

    def recording(views):
        batches.append(views)
        return to_tensor_batch(views)

    monkeypatch.setattr("hypvl.train.radial.to_tensor_batch", recording)
    wrapped, own = _wrapped(tmp_path, "align")
    image_embeddings(wrapped, encoded, torch.device("cpu"))
    assert torch.allclose(wrapped.pixels(to_tensor_batch(batches.pop())), own(images), atol=1e-5)
    ours = context("clip", tmp_path, {}).model
    image_embeddings(ours, encoded, torch.device("cpu"))
    assert torch.equal(to_tensor_batch(batches.pop()),
                       to_tensor_batch([resize_center_crop(image, ours.image_size) for image in images]))
