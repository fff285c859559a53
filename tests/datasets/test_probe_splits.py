"""Linear-probe splits: the catalog's slices equal MERU's catalog, slice arithmetic as TFDS (and on a scaled-down
stand-in), and the data preparation builds exactly those splits from a CLIP_benchmark webdataset, a torchvision
image folder and a TFDS split materialised as an image folder in record order (the smoke world's sources:
test_probe_splits_smoke_world.py)."""

import numpy as np
import pytest
from PIL import Image

from helpers.probe_splits import pixel_bytes
from hypvl.cli import main
from hypvl.data.catalog import load_dataset_info
from hypvl.data.formats.clip_benchmark_wds import ClipBenchmarkDataset, LabelledImage, write_clip_benchmark_wds
from hypvl.data.formats.imagefolder import load_image, read_imagefolder, write_imagefolder
from hypvl.data.formats.images import encode_image
from hypvl.data.probe_splits import build_probe_splits
from hypvl.data.splits import count_extents, parse_split
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


def test_a_scaled_down_split_takes_record_counts_as_fractions_of_what_the_slices_read():
    clevr = [parse_split("train[:4500]"), parse_split("train[4500:5000]"), parse_split("validation[:5000]")]
    assert count_extents(clevr, "clevr") == {"train": 5000, "validation": 5000}
    assert count_extents([parse_split("train[:90%]"), parse_split("train[90%:]")], "cifar10") == {}
    # 89 records stand for CLEVR's first 5000: 4500 * 89 / 5000 = 80.1 -> 80
    assert clevr[0].indices(89, extent=5000) == range(80) and clevr[1].indices(89, extent=5000) == range(80, 89)
    # EuroSAT's train[5000:10000] of 119 standing for 10000: 59.5 -> 60 (half to even, as the percentages)
    assert parse_split("train[5000:10000]").indices(119, extent=10_000) == range(60, 119)
    assert parse_split("train[:90%]").indices(111, extent=5000) == range(100)  # a percentage stays one
    with pytest.raises(InputError, match="beyond the 89 records"):  # EuroSAT's test slice is not in a probe stand-in
        parse_split("train[10000:15000]").indices(89, extent=10_000)
    for mixed in (["train[:4500]", "train[90%:]"], ["train[:4500]", "train[4500:]"], ["train[:4500]", "train"]):
        with pytest.raises(InputError, match="bounded by record counts and by train"):
            count_extents(map(parse_split, mixed), "x")


def _picture(i: int) -> Image.Image:
    return Image.new("RGB", (8, 8), (17 * i % 256, 5 * i % 256, 200))


def test_builds_merus_mnist_splits_from_a_clip_benchmark_webdataset(tmp_path):
    info = load_dataset_info("mnist")
    source = tmp_path / "wds_mnist"
    splits = {"train": [(i, i % 10) for i in range(52)], "test": [(100 + i, (3 * i) % 10) for i in range(20)]}
    for split, rows in splits.items():
        samples = tuple(LabelledImage(f"s{i:04d}", encode_image(_picture(i), "PNG"), label) for i, label in rows)
        write_clip_benchmark_wds(source, ClipBenchmarkDataset(info.class_names, ("a photo of {c}.",), samples), split,
                                 samples_per_shard=7, image_extension="png")
    sizes = build_probe_splits(info, source, tmp_path / "out" / "mnist", ("train", "val", "test"))
    # train[:80%] of 52: round(41.6) = 42 records; train[80%:] the other 10; test whole.
    assert sizes == {"train": 42, "val": 10, "test": 20}
    expected = {"train": splits["train"][:42], "val": splits["train"][42:], "test": splits["test"]}
    for split, rows in expected.items():
        built = read_imagefolder(tmp_path / "out" / "mnist", split)
        assert built.class_names == list(info.class_names)
        got = sorted((label, pixel_bytes(load_image(path))) for path, label in built.samples)
        assert got == sorted((label, pixel_bytes(_picture(i))) for i, label in rows)
    assert not (tmp_path / "out" / "mnist.partial").exists()


def test_builds_sst2_splits_from_torchvisions_image_folder_layout(tmp_path, capsys):
    info = load_dataset_info("sst2")
    source = tmp_path / "rendered-sst2"  # torchvision RenderedSST2: <split>/<negative|positive>/<image>.png
    for split, count in (("train", 6), ("val", 4), ("test", 5)):
        for i in range(count):
            folder = source / split / info.class_names[i % 2]
            folder.mkdir(parents=True, exist_ok=True)
            _picture(i + 10 * len(split)).save(folder / f"{i:03d}.png")
    assert main(["probe-splits", "sst2", "--source", str(source), "--dest", str(tmp_path / "sst2"),
                 "--splits", "train", "val", "test"]) == 0
    assert capsys.readouterr().out == "train\t6\nval\t4\ntest\t5\n"
    for split in ("train", "val", "test"):
        original = read_imagefolder(source, split)
        built = read_imagefolder(tmp_path / "sst2", split)
        assert [(label, pixel_bytes(load_image(p))) for p, label in built.samples] == [
            (label, pixel_bytes(load_image(p))) for p, label in original.samples]


def test_cuts_a_tfds_split_materialised_as_an_image_folder_in_record_order(tmp_path):
    """SUN397 (catalog layout imagefolder) slices train[:80%] / train[80%:] of TFDS' record order: an image folder
    naming each image by its record number keeps that order; one numbering images per class does not."""
    info = load_dataset_info("sun397")
    labels = [int(v) for v in np.random.default_rng(5).integers(0, 3, 30)]
    labels[:3] = [0, 1, 2]
    names = ["a", "b", "c"]
    for record, label in enumerate(labels):  # `<label>/<record>.png`, unpadded: 10 sorts before 9 as text
        folder = tmp_path / "tfds_sun397" / "train" / f"{label:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        _picture(record).save(folder / f"{record}.png")
    (tmp_path / "tfds_sun397" / "classnames.txt").write_text("a\nb\nc\n")
    assert build_probe_splits(info, tmp_path / "tfds_sun397", tmp_path / "sun397") == {"train": 24, "val": 6}
    for split, records in (("train", range(24)), ("val", range(24, 30))):  # round(0.8 * 30) = 24
        built = read_imagefolder(tmp_path / "sun397", split)
        assert built.class_names == names
        assert [(label, pixel_bytes(load_image(p))) for p, label in built.samples] == sorted(
            ((labels[r], pixel_bytes(_picture(r))) for r in records), key=lambda row: row[0])
    write_imagefolder(tmp_path / "per_class", "train", names, [(label, _picture(r)) for r, label in enumerate(labels)])
    with pytest.raises(InputError, match="not named by record number keeps no record order.*train\\[:80%\\]"):
        build_probe_splits(info, tmp_path / "per_class", tmp_path / "sun397_2")


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
    with pytest.raises(InputError, match="src/validation: split folder not found"):
        build_probe_splits(load_dataset_info("pcam"), source, tmp_path / "out")  # pcam's val is `validation`
    assert not (tmp_path / "out").exists()
