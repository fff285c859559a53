"""Linear-probe splits: the catalog's slices equal MERU's catalog, slice arithmetic as TFDS, and the data
preparation builds exactly those splits from a CLIP_benchmark webdataset, a torchvision image folder and the
smoke world."""

import numpy as np
import pytest
from PIL import Image

from hypvl.cli import main
from hypvl.data.catalog import load_dataset_info
from hypvl.data.formats.clip_benchmark_wds import (
    ClipBenchmarkDataset,
    LabelledImage,
    write_clip_benchmark_wds,
)
from hypvl.data.formats.imagefolder import load_image, read_imagefolder
from hypvl.data.formats.images import encode_image
from hypvl.data.probe_splits import build_probe_splits
from hypvl.data.splits import parse_split
from hypvl.data.synthetic.classification import write_classification_set
from hypvl.data.synthetic.settings import WorldSettings
from hypvl.errors import InputError
from hypvl.tasks import linear_probe_datasets

# facebookresearch/meru meru/evaluation/catalog.py, DatasetCatalog.SPLITS: [train, val, test]
MERU_SPLITS = {
    "food101": ["train[:90%]", "train[90%:]", "validation"],
    "cifar10": ["train[:90%]", "train[90%:]", "test"],
    "cifar100": ["train[:90%]", "train[90%:]", "test"],
    "cub2011": ["train[:80%]", "train[80%:]", "test"],
    "sun397": ["train[:80%]", "train[80%:]", "test"],
    "cars": ["train[:80%]", "train[80%:]", "test"],
    "aircraft": ["train", "val", "test"],
    "dtd": ["train", "validation", "test"],
    "pets": ["train[:80%]", "train[80%:]", "test"],
    "caltech101": ["train[:80%]", "train[80%:]", "test"],
    "flowers102": ["train", "validation", "test"],
    "stl10": ["train[:80%]", "train[80%:]", "test"],
    "eurosat": ["train[:5000]", "train[5000:10000]", "train[10000:15000]"],
    "resisc45": ["train[:10%]", "train[10%:20%]", "train[20%:]"],
    "country211": ["train", "valid", "test"],
    "mnist": ["train[:80%]", "train[80%:]", "test"],
    "clevr": ["train[:4500]", "train[4500:5000]", "validation[:5000]"],
    "pcam": ["train", "validation", "test"],
    "sst2": ["train", "val", "test"],
}
MERU_NAME = {"cub": "cub2011", "flowers": "flowers102"}


def test_probe_slices_equal_merus_catalog_for_every_linear_probe_dataset():
    names = linear_probe_datasets("full")
    assert sorted(MERU_NAME.get(n, n) for n in names) == sorted(MERU_SPLITS)
    for name in names:
        slices = load_dataset_info(name).probe_splits
        assert [str(slices[s]) for s in ("train", "val", "test")] == MERU_SPLITS[MERU_NAME.get(name, name)], name
    assert load_dataset_info("imagenet").linear_probe is None


def test_slice_indices_round_percentages_to_the_closest_record_as_tfds():
    assert parse_split("train[:90%]").indices(1001) == range(901)  # 900.9 -> 901
    assert parse_split("train[90%:]").indices(1001) == range(901, 1001)
    assert parse_split("train[10%:20%]").indices(25) == range(2, 5)  # 2.5 -> 2 (half to even), 5.0
    assert parse_split("train[20%:]").indices(31_500) == range(6300, 31_500)
    assert parse_split("train[5000:10000]").indices(27_000) == range(5000, 10_000)
    assert parse_split("validation").indices(7) == range(7)
    assert parse_split("validation[:5000]") == parse_split(" validation[:5000] ")
    with pytest.raises(InputError, match="beyond the 4000 records"):
        parse_split("train[:4500]").indices(4000)
    for bad in ("train[:90]%", "train[a:b]", "[:5]", "train[-5:]", "train[:150%]"):
        with pytest.raises(InputError):
            parse_split(bad).indices(100)


def _picture(i: int) -> Image.Image:
    return Image.new("RGB", (8, 8), (17 * i % 256, 5 * i % 256, 200))


def _pixels(image) -> bytes:
    return np.asarray(image).tobytes()


def test_builds_merus_mnist_splits_from_a_clip_benchmark_webdataset(tmp_path):
    info = load_dataset_info("mnist")
    source = tmp_path / "wds_mnist"
    splits = {"train": [(i, i % 10) for i in range(52)], "test": [(100 + i, (3 * i) % 10) for i in range(20)]}
    for split, rows in splits.items():
        samples = tuple(LabelledImage(f"s{i:04d}", encode_image(_picture(i), "PNG"), label) for i, label in rows)
        write_clip_benchmark_wds(source, ClipBenchmarkDataset(info.class_names, ("a photo of {c}.",), samples), split,
                                 samples_per_shard=7, image_extension="png")
    sizes = build_probe_splits(info, source, tmp_path / "out" / "mnist")
    # train[:80%] of 52: round(41.6) = 42 records; train[80%:] the other 10; test whole.
    assert sizes == {"train": 42, "val": 10, "test": 20}
    expected = {"train": splits["train"][:42], "val": splits["train"][42:], "test": splits["test"]}
    for split, rows in expected.items():
        built = read_imagefolder(tmp_path / "out" / "mnist", split)
        assert built.class_names == list(info.class_names)
        got = sorted((label, _pixels(load_image(path))) for path, label in built.samples)
        assert got == sorted((label, _pixels(_picture(i))) for i, label in rows)
    assert not (tmp_path / "out" / "mnist.partial").exists()


def test_builds_sst2_splits_from_torchvisions_image_folder_layout(tmp_path, capsys):
    info = load_dataset_info("sst2")
    source = tmp_path / "rendered-sst2"  # torchvision RenderedSST2: <split>/<negative|positive>/<image>.png
    for split, count in (("train", 6), ("val", 4), ("test", 5)):
        for i in range(count):
            folder = source / split / info.class_names[i % 2]
            folder.mkdir(parents=True, exist_ok=True)
            _picture(i + 10 * len(split)).save(folder / f"{i:03d}.png")
    assert main(["probe-splits", "sst2", "--source", str(source), "--dest", str(tmp_path / "sst2")]) == 0
    assert capsys.readouterr().out == "train\t6\nval\t4\ntest\t5\n"
    for split in ("train", "val", "test"):
        original = read_imagefolder(source, split)
        built = read_imagefolder(tmp_path / "sst2", split)
        assert [(label, _pixels(load_image(p))) for p, label in built.samples] == [
            (label, _pixels(load_image(p))) for p, label in original.samples]


def test_builds_the_catalog_slices_from_the_smoke_world(tmp_path):
    settings = WorldSettings(per_class=2, probe_train_per_class=10, probe_val_per_class=1, image_size=16)
    world = tmp_path / "world"
    for name in ("aircraft", "cifar10"):
        write_classification_set(settings, name, world)
    # aircraft: MERU's splits are whole (train, val, test), which the smoke world's image folders hold.
    info = load_dataset_info("aircraft")
    sizes = build_probe_splits(info, world / "aircraft", tmp_path / "aircraft")
    for split in ("train", "val", "test"):
        source = read_imagefolder(world / "aircraft", split).samples
        built = read_imagefolder(tmp_path / "aircraft", split).samples
        assert sizes[split] == len(source) and [(label, _pixels(load_image(p))) for p, label in built] == [
            (label, _pixels(load_image(p))) for p, label in source]
    # cifar10 slices train[:90%] / train[90%:]: an image folder keeps no record order and is refused; the
    # smoke world's images in a record order (classes interleaved) as a webdataset give exactly the slices.
    info = load_dataset_info("cifar10")
    with pytest.raises(InputError, match="keeps no record order.*train\\[:90%\\]"):
        build_probe_splits(info, world / "cifar10", tmp_path / "cifar10")
    source = tmp_path / "wds_cifar10"
    rows = {}
    for split in ("train", "test"):
        samples = read_imagefolder(world / "cifar10", split).samples
        rows[split] = sorted(samples, key=lambda s: (s[0].stem, s[1]))  # image 0 of every class, then 1, ...
        records = tuple(LabelledImage(f"{n:04d}", path.read_bytes(), label) for n, (path, label) in enumerate(rows[split]))
        write_clip_benchmark_wds(source, ClipBenchmarkDataset(info.class_names, ("{c}",), records), split,
                                 image_extension="png")
    assert build_probe_splits(info, source, tmp_path / "cifar10") == {"train": 90, "val": 10, "test": 20}
    for split, chosen in (("train", rows["train"][:90]), ("val", rows["train"][90:]), ("test", rows["test"])):
        built = read_imagefolder(tmp_path / "cifar10", split).samples
        assert sorted((label, _pixels(load_image(p))) for p, label in built) == sorted(
            (label, _pixels(load_image(p))) for p, label in chosen)


def test_a_split_missing_a_class_or_a_source_split_is_an_error(tmp_path):
    info = load_dataset_info("sst2")
    source = tmp_path / "src"
    for split in ("train", "val", "test"):
        folder = source / split / "negative"
        folder.mkdir(parents=True)
        _picture(1).save(folder / "0.png")
    with pytest.raises(InputError, match=r"sst2 train split train holds no image of class\(es\) \[1\]"):
        build_probe_splits(info, source, tmp_path / "out")
    (source / "train" / "positive").mkdir()
    _picture(2).save(source / "train" / "positive" / "0.png")
    with pytest.raises(InputError, match="split folder not found"):
        build_probe_splits(load_dataset_info("pcam"), source, tmp_path / "out")  # pcam's val is `validation`
    assert not (tmp_path / "out").exists()
