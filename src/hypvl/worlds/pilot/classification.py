"""The pilot world's 20 classification sets, each in the layout acquisition leaves it (catalog `layout`):

- CLIP_benchmark webdatasets (`clip-benchmark/wds_*` on the Hub): served as Hub snapshots of the mirror, Stanford
  Cars (manual: the Hub copy fetched by hand) left in its folder;
- image folders: ImageNet (manual: the validation tar and devkit left in its folder), RESISC45 (manual: the
  extracted NWPU-RESISC45 folder), CUB, SUN397, EuroSAT and CLEVR (their archives served): each with the test split
  its `prepare` step materialises, `<classification_split>/<class>/<image>` (class folders: ImageNet's WordNet ids,
  the others' label index).

Only the first `classes` classes of a set get images (`images_per_class` each), as the pilot evaluates with
`eval.max_classes`; the class-name files list every class. Pictures have each set's own size and mode (28-pixel
grey digits, 32-pixel CIFAR images, 500x375 photographs).
"""

import json
from importlib import resources

from PIL import Image

from hypvl.data.catalog import DatasetInfo, dataset_names, load_dataset_info
from hypvl.data.formats.clip_benchmark_wds import ClipBenchmarkDataset, LabelledImage, write_clip_benchmark_wds
from hypvl.worlds.smoke import render
from hypvl.worlds.smoke.corpora import random_object
from hypvl.worlds.smoke.settings import rng_for
from hypvl.worlds.smoke.world import SCENES, leaf_concepts

from .world import PilotWorld, image_bytes, tar_bytes, zip_bytes

PHOTO = (500, 375, "RGB")
# set -> (width, height, mode) of its pictures, where not a photograph's
NATIVE = {"cifar10": (32, 32, "RGB"), "cifar100": (32, 32, "RGB"), "mnist": (28, 28, "L"), "stl10": (96, 96, "RGB"),
          "pcam": (96, 96, "RGB"), "eurosat": (64, 64, "RGB"), "resisc45": (256, 256, "RGB"),
          "clevr": (480, 320, "RGB"), "country211": (400, 300, "RGB")}


def picture(seed: int, stream: str, index: int, shape: tuple[int, int, str]) -> Image.Image:
    """Picture `index` of `stream`: a drawn world scene of one or two objects, at the set's size and mode."""
    rng = rng_for(seed, stream, index)
    width, height, mode = shape
    side = max(width, height, 64)
    leaves = leaf_concepts()
    pic = render.Picture(str(rng.choice(list(SCENES))),
                         [random_object(rng, leaves) for _ in range(int(rng.integers(1, 3)))])
    render.place(pic.objects, side, rng)
    return render.draw(pic, side, rng).resize((width, height), Image.BILINEAR).convert(mode)


def labelled(world: PilotWorld, info: DatasetInfo) -> list[tuple[int, Image.Image]]:
    """(label, picture) of the set's first `classes` classes, `images_per_class` each, class by class."""
    settings, shape = world.settings, NATIVE.get(info.name, PHOTO)
    return [(label, picture(settings.seed, f"pilot/{info.name}/{label}", i, shape))
            for label in range(min(settings.classes, info.num_classes)) for i in range(settings.images_per_class)]


def webdataset(world: PilotWorld, info: DatasetInfo) -> ClipBenchmarkDataset:
    """The set as CLIP_benchmark's builder writes it: WEBP images, every class name, its templates with `{c}`."""
    samples = tuple(LabelledImage(f"s{index:07d}", image_bytes(image, "WEBP"), label)
                    for index, (label, image) in enumerate(labelled(world, info)))
    return ClipBenchmarkDataset(info.class_names, tuple(t.replace("{}", "{c}") for t in info.clip_prompts), samples)


def imagenet_wnids() -> list[str]:
    """The 1000 ILSVRC-2012 WordNet ids in label order, as timm ships them."""
    text = resources.files("timm.data._info").joinpath("imagenet_synsets.txt").read_text()
    return text.split()


def prepared_test(world: PilotWorld, info: DatasetInfo, split: str, folder_names: list[str], ext: str,
                  prefix: str) -> list:
    """Leave the set's test split as its prepare step materialises it (`<split>/<class folder>/<prefix><n>.<ext>`);
    returns [(label, file name, encoded image)]."""
    items = []
    for index, (label, image) in enumerate(labelled(world, info)):
        name = f"{prefix}{index + 1:08d}.{ext}"
        data = image_bytes(image, "PNG" if ext == "png" else "JPEG")
        world.leave(info.name, f"{split}/{folder_names[label]}/{name}", data)
        items.append((label, name, data))
    return items


def write_imagenet(world: PilotWorld, info: DatasetInfo, split: str) -> None:
    """The validation tar and devkit left by the manual step, and `<split>/<wnid>/` the prepare step sorts them
    into."""
    wnids = imagenet_wnids()
    items = prepared_test(world, info, split, wnids, "JPEG", "ILSVRC2012_val_")
    world.leave("imagenet", "ILSVRC2012_img_val.tar", tar_bytes({name: data for _, name, data in items}))
    truth = "".join(f"{label + 1}\n" for label, _, _ in items)  # the devkit numbers classes from 1
    world.leave("imagenet", "ILSVRC2012_devkit_t12.tar.gz", tar_bytes(
        {"ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt": truth.encode()}, gzip=True))


def write_archived(world: PilotWorld, info: DatasetInfo, split: str) -> None:
    """A set whose archives are served (CUB, SUN397, EuroSAT, CLEVR) or whose folder a human extracts (RESISC45):
    the archives holding the pictures under the real archive's names, and the prepared test split."""
    numbers = [str(label) for label in range(info.num_classes)]
    items = prepared_test(world, info, split, numbers, "png" if info.name == "clevr" else "jpg", f"{info.name}_")
    folder = {label: info.class_names[label].replace(" ", "_") for label, _, _ in items}
    if info.name == "resisc45":
        for label, name, data in items:
            world.leave("resisc45", f"NWPU-RESISC45/{folder[label]}/{folder[label]}_{name[-7:]}", data)  # _001.jpg
        return
    files = world.entry(info.name)["files"]
    if info.name == "cub":
        pictures = {f"CUB_200_2011/images/{label + 1:03d}.{folder[label]}/{name}": data for label, name, data in items}
        listed = list(pictures)
        pictures["CUB_200_2011/images.txt"] = "".join(f"{i + 1} {p.split('images/')[1]}\n"
                                                     for i, p in enumerate(listed)).encode()
        pictures["CUB_200_2011/train_test_split.txt"] = "".join(f"{i + 1} 0\n" for i in range(len(listed))).encode()
        world.serve(files[0]["url"], tar_bytes(pictures, gzip=True))
    elif info.name == "sun397":
        pictures = {f"SUN397/{folder[label][0]}/{folder[label]}/{name}": data for label, name, data in items}
        world.serve(files[0]["url"], tar_bytes(pictures, gzip=True))
        listing = "".join(f"/{path.removeprefix('SUN397/')}\n" for path in pictures).encode()
        world.serve(files[1]["url"], zip_bytes({"Testing_01.txt": listing, "Training_01.txt": b""}))
    elif info.name == "eurosat":
        world.serve(files[0]["url"], zip_bytes({f"EuroSAT_RGB/{folder[label]}/{name}": data
                                                for label, name, data in items}))
    elif info.name == "clevr":
        scenes = [{"image_index": i, "image_filename": name, "objects": [{}] * int(info.class_names[label])}
                  for i, (label, name, _) in enumerate(items)]
        pictures = {f"CLEVR_v1.0/images/val/{name}": data for _, name, data in items}
        pictures["CLEVR_v1.0/scenes/CLEVR_val_scenes.json"] = json.dumps({"scenes": scenes}).encode()
        world.serve(files[0]["url"], zip_bytes(pictures))


def write_classification_set(world: PilotWorld, name: str, split: str) -> None:
    """Set `name` as acquisition (and a human's manual or prepare step) leaves it; `split`: config
    `eval.classification_split`."""
    info = load_dataset_info(name)
    entry = world.entry(name)
    if info.layout == "clip_benchmark_wds":
        root = world.dest(name) if entry.get("manual") else world.hub_folder(name)
        write_clip_benchmark_wds(root, webdataset(world, info), split, image_extension="webp")
    elif name == "imagenet":
        write_imagenet(world, info, split)
    else:
        write_archived(world, info, split)


def write_classification_sets(world: PilotWorld, split: str) -> list[str]:
    """Every catalog set; returns their names."""
    names = dataset_names()
    for name in names:
        write_classification_set(world, name, split)
    return names
