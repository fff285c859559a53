"""Linear-probe splits: the catalog's slices equal MERU's catalog, slice arithmetic as TFDS (and on a scaled-down
stand-in), and the data preparation builds exactly those splits from a CLIP_benchmark webdataset, a torchvision
image folder, a TFDS split materialised as an image folder in record order, and the smoke world's sources."""

import io
import re
import tarfile
from fractions import Fraction

import numpy as np
import pytest
import yaml
from PIL import Image

from hypvl.cli import main
from hypvl.config import load_config
from hypvl.data.catalog import CATALOG_DIR, load_dataset_info
from hypvl.data.formats.clip_benchmark_wds import (
    ClipBenchmarkDataset,
    LabelledImage,
    write_clip_benchmark_wds,
)
from hypvl.data.formats.imagefolder import load_image, read_imagefolder, write_imagefolder
from hypvl.data.formats.images import encode_image
from hypvl.data.probe_splits import build_probe_splits
from hypvl.data.splits import count_extents, parse_split
from hypvl.data.synthetic.classification_sets import ALL_CLASSIFICATION_SETS
from hypvl.data.synthetic.probe_sources import probe_source_sets, write_probe_sources
from hypvl.data.synthetic.settings import WorldSettings
from hypvl.errors import InputError
from hypvl.io import OUTPUTS
from hypvl.tasks import linear_probe_datasets
from hypvl.workflow import Plan

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
    sizes = build_probe_splits(info, source, tmp_path / "out" / "mnist", ("train", "val", "test"))
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
    assert main(["probe-splits", "sst2", "--source", str(source), "--dest", str(tmp_path / "sst2"),
                 "--splits", "train", "val", "test"]) == 0
    assert capsys.readouterr().out == "train\t6\nval\t4\ntest\t5\n"
    for split in ("train", "val", "test"):
        original = read_imagefolder(source, split)
        built = read_imagefolder(tmp_path / "sst2", split)
        assert [(label, _pixels(load_image(p))) for p, label in built.samples] == [
            (label, _pixels(load_image(p))) for p, label in original.samples]


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
        assert [(label, _pixels(load_image(p))) for p, label in built.samples] == sorted(
            ((labels[r], _pixels(_picture(r))) for r in records), key=lambda row: row[0])
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


# ------------------------------------------------------------------------------------ the smoke world's sources

SMOKE = WorldSettings(probe_train_per_class=2, probe_val_per_class=1, image_size=16, shard_size=40)
SLICE = re.compile(r"(\w+)(?:\[(\d*%?):(\d*%?)\])?")


def catalog_slices(name: str) -> dict[str, tuple[str, str, str]]:
    """{"train", "val"} -> (split, start, stop) as the catalog file writes them, read without hypvl."""
    record = yaml.safe_load((CATALOG_DIR / f"{name}.yaml").read_text())
    return {role: SLICE.fullmatch(text).groups() for role, text in record["linear_probe"].items()}


def slice_records(slices, role: str, size: int) -> range:
    """The records slice `role` takes from its split of `size` records: a percentage p gives round(p * size / 100)
    (half to even), a count b on a split the slices bound by counts up to E gives round(b * size / E)."""
    split, start, stop = slices[role]
    counts = [int(b) for s, *bounds in slices.values() if s == split for b in bounds if b and not b.endswith("%")]

    def index(bound, default):
        if not bound:
            return default
        if bound.endswith("%"):
            return round(Fraction(int(bound[:-1]) * size, 100))
        return round(Fraction(int(bound) * size, max(counts)))

    return range(index(start, 0), index(stop, size))


def read_source(folder) -> list[tuple[int, bytes]]:
    """(label, pixels) of every record of a source split, in record order, read with tarfile and PIL."""
    if (folder / "nshards.txt").is_file():
        rows = {}
        for shard in range(int((folder / "nshards.txt").read_text())):
            with tarfile.open(folder / f"{shard}.tar") as tar:
                for member in tar.getmembers():
                    key, ext = member.name.split(".", 1)
                    rows.setdefault(key, {})[ext] = tar.extractfile(member).read()
        return [(int(row["cls"]), _pixels(Image.open(io.BytesIO(row["png"])).convert("RGB"))) for row in rows.values()]
    classes = sorted(p.name for p in folder.iterdir())
    files = sorted((int(f.stem), classes.index(f.parent.name), f) for f in folder.glob("*/*.png"))
    assert [record for record, _, _ in files] == list(range(len(files)))
    return [(label, _pixels(Image.open(f).convert("RGB"))) for _, label, f in files]


def read_built(folder) -> list[tuple[int, bytes]]:
    """(label, pixels) of a built split folder: class folders in order, images in name order."""
    classes = sorted(p.name for p in folder.iterdir())
    return [(label, _pixels(Image.open(f).convert("RGB")))
            for label, name in enumerate(classes) for f in sorted((folder / name).iterdir())]


@pytest.fixture(scope="module")
def smoke_sources(tmp_path_factory):
    root = tmp_path_factory.mktemp("world") / "probe_sources"
    return root, {name: write_probe_sources(SMOKE, name, root) for name in probe_source_sets()}


@pytest.fixture(scope="module")
def smoke_options() -> list[str]:
    """The options the workflow's probe_splits rule passes to `hypvl probe-splits` at smoke scale."""
    return Plan(load_config()).data.probe_splits_options()


def test_the_smoke_world_writes_each_probe_sets_source_splits_in_its_catalog_layout(smoke_sources):
    root, written = smoke_sources
    assert sorted(written) == sorted(linear_probe_datasets("smoke"))
    for name, entry in written.items():
        info, classes = load_dataset_info(name), len(ALL_CLASSIFICATION_SETS[name].classes)
        slices = catalog_slices(name)
        assert entry["layout"] == info.layout
        assert sorted(entry["splits"]) == sorted(p.name for p in (root / name).iterdir() if p.is_dir())
        assert set(entry["splits"]) == {split for split, _, _ in slices.values()}
        for split, size in entry["splits"].items():
            records = read_source(root / name / split)
            if info.layout == "clip_benchmark_wds":
                assert (root / name / split / "nshards.txt").read_text() == f"{-(-size // SMOKE.shard_size)}\n"
            assert [label for label, _ in records] == [r % classes for r in range(size)]  # classes take turns
            cut = [role for role, (s, start, stop) in slices.items() if s == split and (start or stop)]
            if not cut:  # taken whole: probe_train_per_class or probe_val_per_class images per class
                role = next(role for role, (s, _, _) in slices.items() if s == split)
                assert size == classes * (SMOKE.probe_train_per_class if role == "train" else SMOKE.probe_val_per_class)
                continue

            def enough(n):  # every slice balanced, the train slice with probe_train_per_class per class
                counts = {role: len(slice_records(slices, role, n)) for role in cut}
                return all(count % classes == 0 and count >= classes * (
                    SMOKE.probe_train_per_class if role == "train" else 1) for role, count in counts.items())

            assert enough(size) and not any(map(enough, range(classes, size))), name  # the fewest such records


@pytest.mark.parametrize("name", sorted(probe_source_sets()))
def test_the_probe_step_builds_exactly_the_records_the_catalog_slices_select(smoke_sources, smoke_options, tmp_path,
                                                                            capsys, name):
    root, _ = smoke_sources
    assert main(["probe-splits", name, "--source", str(root / name), "--dest", str(tmp_path / name),
                 "--splits", "train", "val", *smoke_options]) == 0
    slices, counts = catalog_slices(name), {}
    for role in ("train", "val"):
        source = read_source(root / name / slices[role][0])
        chosen = [source[r] for r in slice_records(slices, role, len(source))]
        assert read_built(tmp_path / name / role) == sorted(chosen, key=lambda row: row[0]), role
        counts[role] = len(chosen)
    assert capsys.readouterr().out == f"train\t{counts['train']}\nval\t{counts['val']}\n"
    assert sorted(p.name for p in (tmp_path / name).iterdir()) == [OUTPUTS, "classnames.txt", "train", "val"]


def test_a_missing_source_split_is_one_line_naming_it(smoke_sources, tmp_path, capsys):
    root, _ = smoke_sources
    source = tmp_path / "dtd"
    source.mkdir()
    for item in ("classnames.txt", "train"):
        (source / item).symlink_to(root / "dtd" / item)
    assert main(["probe-splits", "dtd", "--source", str(source), "--dest", str(tmp_path / "out"),
                 "--scaled-source"]) == 1
    err = capsys.readouterr().err
    assert err == (f"hypvl probe-splits: {source / 'validation'}: split folder not found (expected CLIP_benchmark's "
                   "webdataset, validation/nshards.txt and shards with classnames.txt beside, or an image folder "
                   "validation/<class>/<image>)\n")
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.partial").exists()


@pytest.mark.slow
def test_after_the_dag_step_every_probe_set_holds_exactly_the_sliced_records(tmp_path):
    """The workflow's own jobs on a tiny world: synthesize_evaluation writes the sources, one probe_splits job per
    set cuts them; a second call finds nothing to do."""
    from test_workflow import snakemake, tiny_config

    config = tiny_config(tmp_path)
    data = tmp_path / "data" / "eval"
    targets = [str(data / "linear_probe" / name) for name in linear_probe_datasets("smoke")]
    run = snakemake(*targets, "--cores", "2", "--configfile", str(config))
    assert run.returncode == 0, run.stderr[-3000:]
    for name in linear_probe_datasets("smoke"):
        slices = catalog_slices(name)
        for role in ("train", "val"):
            source = read_source(data / "probe_sources" / name / slices[role][0])
            chosen = [source[r] for r in slice_records(slices, role, len(source))]
            assert read_built(data / "linear_probe" / name / role) == sorted(chosen, key=lambda row: row[0])
    again = snakemake(*targets, "--cores", "2", "--configfile", str(config))
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
