"""Trust, round three (issue 44), beyond the one-line refusals of tests/trust/test_bad_inputs_bounds.py and
tests/trust/test_bad_inputs_results.py: pilot jobs refused at planning at another scale, the pilot world never
written over a file the suite did not write, a dry run that changes no file's date, images deeper than 8 bits read by
their own range, every number of the config schema bounded, and YAML aliases bounded wherever YAML is read."""

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

from helpers import REPO
from helpers.workflow import tiny_config
from hypvl.config import load_config, validate_config
from hypvl.data.formats.classification_split import read_classification_split
from hypvl.data.formats.clip_benchmark_wds import ClipBenchmarkDataset, LabelledImage, write_clip_benchmark_wds
from hypvl.data.formats.images import decode_image
from hypvl.worlds.pilot.commands import write_pilot_world
from hypvl.worlds.pilot.install import RECORD, STAGING, install
from hypvl.errors import InputError
from hypvl.provenance import file_digest
from hypvl.yaml_text import MAX_VALUES, safe_load

SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
PILOT = [REPO / "workflows/config/full.yaml", REPO / "workflows/config/pilot.yaml"]

# --------------------------------------------------------------------------- the pilot's scale and data


def test_pilot_jobs_are_refused_at_planning_at_another_scale(tmp_path):
    """`--configfile pilot.yaml full.yaml` (the wrong order) plans no job: one line says the pilot world is the pilot
    scale's, and nothing is written under data_dir (before, its pilot_world job wrote over data/full)."""
    folders = tmp_path / "folders.yaml"
    folders.write_text(yaml.safe_dump({"data_dir": str(tmp_path / "data" / "full"),
                                       "results_dir": str(tmp_path / "results"),
                                       "fetch": {"mirror": str(tmp_path / "mirror"),
                                                 "sources": str(tmp_path / "mirror" / "sources.yaml")}}))
    run = subprocess.run([SNAKEMAKE, "-n", "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path),
                          "reports/table1.md", "--cores", "1", "--configfile", str(PILOT[1]), str(PILOT[0]),
                          str(folders)], capture_output=True, text=True, timeout=600)
    assert run.returncode != 0
    assert "the pilot world belongs to scale 'pilot', not 'full'" in run.stdout + run.stderr, run.stdout[-2000:]
    assert not (tmp_path / "data").exists() and not (tmp_path / "mirror").exists()


def test_the_right_order_is_the_pilot_scale():
    assert load_config(PILOT)["scale"] == "pilot"


def staged(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def test_install_replaces_only_what_the_pilot_world_wrote(tmp_path):
    """A file the pilot world recorded writing, or holding the bytes staged, is replaced; a user's file (never
    written, or put in place of the pilot's) refuses the whole install with nothing moved."""
    target = tmp_path / "data"
    install([(staged(tmp_path / "s1", {"a/x.tar": b"pilot 1", "b.txt": b"same"}), target)], "b.txt")
    assert (target / "a/x.tar").read_bytes() == b"pilot 1"
    assert f"{file_digest(target / 'a/x.tar')}  a/x.tar" in (target / RECORD).read_text()
    install([(staged(tmp_path / "s2", {"a/x.tar": b"pilot 2"}), target)], "-")  # recorded: replaced
    assert (target / "a/x.tar").read_bytes() == b"pilot 2"
    (target / "a/x.tar").write_bytes(b"the user's")  # recorded name, another file now
    (target / "c.jpg").write_bytes(b"the user's too")  # never written by the pilot world
    stage = staged(tmp_path / "s3", {"a/x.tar": b"pilot 3", "c.jpg": b"pilot", "d.txt": b"new"})
    with pytest.raises(InputError, match=r"data: holds files the pilot world did not write \(a/x\.tar, c\.jpg\)"):
        install([(stage, target)], "-")
    assert (target / "a/x.tar").read_bytes() == b"the user's" and not (target / "d.txt").exists()
    install([(staged(tmp_path / "s4", {"c.jpg": b"the user's too"}), target)], "-")  # the very bytes: nothing lost


def test_install_never_writes_through_a_symlinked_folder(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "eval").symlink_to(elsewhere)
    with pytest.raises(InputError, match=r"eval/x\.txt"):
        install([(staged(tmp_path / "s", {"eval/x.txt": b"pilot"}), tmp_path / "data")], "-")
    assert list(elsewhere.iterdir()) == []


@pytest.fixture(scope="module")
def small_pilot_config(tmp_path_factory):
    root = tmp_path_factory.mktemp("pilot")
    config = load_config(PILOT)
    config["data_dir"] = str(root / "data")
    config["fetch"] = {"mirror": str(root / "mirror"), "sources": str(root / "mirror" / "sources.yaml"),
                       "weights": None}
    config["pilot_world"].update(classes=2, images_per_class=1, grit_samples=2, redcaps_samples=2, cc3m_samples=2,
                                 yfcc15m_samples=2, shard_size=2, retrieval_images=2, scene_items=1)
    return config


def test_the_pilot_world_leaves_a_users_imagenet_tar_alone(small_pilot_config):
    """The pilot world over a data_dir already holding a user's ImageNet validation tar: refused, naming it, the tar
    untouched, no staging folder left; with the tar moved away it is written, and written again over itself."""
    data = Path(small_pilot_config["data_dir"])
    tar = data / small_pilot_config["acquire"]["imagenet"] / "ILSVRC2012_img_val.tar"
    tar.parent.mkdir(parents=True)
    tar.write_bytes(b"50,000 validation images")
    with pytest.raises(InputError, match=r"holds files the pilot world did not write \(.*ILSVRC2012_img_val\.tar\)"):
        write_pilot_world(small_pilot_config)
    assert tar.read_bytes() == b"50,000 validation images" and not (data / STAGING).exists()
    assert not (Path(small_pilot_config["fetch"]["mirror"]) / "pilot_world.json").exists()
    tar.unlink()
    for _ in range(2):
        write_pilot_world(small_pilot_config)
        assert tar.read_bytes()[:20] == b"ILSVRC2012_val_00000" and not (data / STAGING).exists()


# --------------------------------------------------------------------------- planning changes nothing


def test_a_dry_run_changes_no_files_date(tmp_path):
    """`snakemake -n` of the real workflow leaves a result dated in the future as it is, whether it plans or refuses
    (before, planning redated it to now)."""
    future = time.time() + 3e7
    result = tmp_path / "results" / "logs" / "an_old_job.log"
    result.parent.mkdir(parents=True)
    result.write_text("done\n")
    os.utime(result, (future, future))
    run = subprocess.run([SNAKEMAKE, "-n", "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path),
                          str(tmp_path / "reports" / "table1.md"), "--cores", "1", "--configfile",
                          str(tiny_config(tmp_path))], capture_output=True, text=True, timeout=600)
    assert result.stat().st_mtime == pytest.approx(future)


# --------------------------------------------------------------------------- images deeper than 8 bits


def encoded(pixels: np.ndarray, fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, fmt)
    return buffer.getvalue()


GREYS = np.array([[0, 25700, 65535]], np.uint16)  # 0, 100 and 255 in 8 bits


@pytest.mark.parametrize("data", [encoded(GREYS, "PNG"), encoded(GREYS, "TIFF"),
                                  encoded(GREYS.astype(np.float32) / 65535, "TIFF")],
                         ids=["png_16_bits", "tiff_16_bits", "tiff_float"])
def test_deep_greys_decode_by_their_range(data):
    """A 16-bit PNG decoded all white, a float TIFF all black (PIL's convert clips at 255): each now by its range."""
    assert np.asarray(decode_image(data, "x"))[0, :, 0].tolist() == [0, 100, 255]


def test_an_evaluation_set_reads_a_16_bit_png_by_its_range(tmp_path):
    """Both layouts of a classification split: an image folder and a CLIP_benchmark webdataset holding 16-bit PNGs."""
    folder = tmp_path / "folder"
    (folder / "test" / "0").mkdir(parents=True)
    (folder / "test" / "0" / "a.png").write_bytes(encoded(GREYS, "PNG"))
    webdataset = tmp_path / "wds"
    write_clip_benchmark_wds(webdataset, ClipBenchmarkDataset(("grey",), ("a {c}.",), (
        LabelledImage("s0", encoded(GREYS, "PNG"), 0),)), image_extension="png")
    for root in (folder, webdataset):
        assert np.asarray(read_classification_split(root, "test").load(0))[0, :, 1].tolist() == [0, 100, 255]


def test_an_integer_image_of_unknown_range_is_refused():
    data = encoded(np.array([[-5, 7]], np.int32), "TIFF")
    with pytest.raises(InputError, match=r"^x: image refused: 32-bit integer pixels from -5 to 7, of no known range"):
        decode_image(data, "x")


# --------------------------------------------------------------------------- numbers and aliases


def numeric_leaves(node, path="schema"):
    """(path, node) of every schema node typed integer or number."""
    if isinstance(node, dict):
        types = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
        if {"integer", "number"} & set(types):
            yield path, node
        for key, value in node.items():
            yield from numeric_leaves(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from numeric_leaves(value, f"{path}[{index}]")


def test_every_number_of_the_config_schema_is_bounded():
    schema = yaml.safe_load((REPO / "src/hypvl/config/schema.yaml").read_text())
    unbounded = [path for path, node in numeric_leaves(schema)
                 if not ({"minimum", "exclusiveMinimum"} & set(node) and {"maximum", "exclusiveMaximum"} & set(node))]
    assert unbounded == []


def bomb(levels: int, width: int = 9) -> str:
    return "".join([f"a0: &a0 [{', '.join(['x'] * width)}]\n",
                    *(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]\n" for i in range(1, levels))])


def test_yaml_aliases_are_bounded():
    """A bomb (9^9 values), a merge bomb (2^40 keys merged) and a recursive alias are refused at once; a document of
    aliases within MAX_VALUES reads as before."""
    merges = "m0: &m0 {x: 1}\n" + "".join(f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}]}}\n" for i in range(1, 41))
    for text in (bomb(9), merges, "a: &a [*a]\n"):
        start = time.perf_counter()
        with pytest.raises(yaml.YAMLError, match=f"expand to more than {MAX_VALUES} values"):
            safe_load(text)
        assert time.perf_counter() - start < 1.0
    assert len(safe_load(bomb(6))["a5"]) == 9  # 9^6 = 531,441 values


def test_a_config_snakemake_read_with_aliases_followed_is_bounded():
    """Snakemake's own loader reads `--configfile` (shared values for aliases): the config check refuses a bomb before
    anything walks it."""
    config = load_config()
    shared = ["x"] * 9
    for _ in range(8):
        shared = [shared] * 9
    with pytest.raises(InputError, match=r"^the workflow config: its values expand to more than 1000000"):
        validate_config({**config, "regression_extras": {"bomb": shared}}, "the workflow config")
