"""Linear-probe splits on the smoke world's sources: each probe set's source splits written in its catalog layout,
and the probe step (alone and as the workflow's job) building exactly the records the catalog's slices select,
read back with tarfile and PIL."""

import io
import re
import tarfile
from fractions import Fraction

import pytest
import yaml
from PIL import Image

from helpers.probe_splits import pixel_bytes
from hypvl.cli import main
from hypvl.config import load_config
from hypvl.data.catalog import CATALOG_DIR, load_dataset_info
from hypvl.worlds.smoke.classification_sets import ALL_CLASSIFICATION_SETS
from hypvl.worlds.smoke.probe_sources import probe_source_sets, write_probe_sources
from hypvl.worlds.smoke.settings import WorldSettings
from hypvl.io import OUTPUTS
from hypvl.tasks import linear_probe_datasets
from hypvl.workflow import Plan

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
        return [(int(row["cls"]), pixel_bytes(Image.open(io.BytesIO(row["png"])).convert("RGB"))) for row in rows.values()]
    classes = sorted(p.name for p in folder.iterdir())
    files = sorted((int(f.stem), classes.index(f.parent.name), f) for f in folder.glob("*/*.png"))
    assert [record for record, _, _ in files] == list(range(len(files)))
    return [(label, pixel_bytes(Image.open(f).convert("RGB"))) for _, label, f in files]


def read_built(folder) -> list[tuple[int, bytes]]:
    """(label, pixels) of a built split folder: class folders in order, images in name order."""
    classes = sorted(p.name for p in folder.iterdir())
    return [(label, pixel_bytes(Image.open(f).convert("RGB")))
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
    from helpers.workflow import snakemake, tiny_config

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
