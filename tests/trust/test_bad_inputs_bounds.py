"""The bad-input corpus, round three (issue 44), bounds: what an attacker who controls a config, a spec, a manifest or a
data file tried, each refused as tests/trust/test_bad_inputs_malformed.py's are (the real `hypvl` command run
in-process: a non-zero exit, exactly one line on stderr naming the file and the problem, no traceback, no output file).
Before the fixes each was a silent wrong result, a hang or data lost: the pilot world written over a paper-scale
data_dir, a batch scale of 10^300, an alias bomb walked for minutes, 10^11 shard paths built, a float TIFF read all
black.

Each case builds its input under `tmp_path` and returns (argv, the file the line must name, a regular expression for
the problem, the outputs that must not exist).
"""

import io

import numpy as np
import pytest
import yaml
from PIL import Image

from helpers import REPO
from helpers.bad_input_builders import (
    config_case,
    finetune_case,
    format_case,
    refused_in_one_line,
    shard_member_case,
    spec_case,
    spec_text_case,
    write,
)
from helpers.format_fixtures import BUILDERS

# --------------------------------------------------------------------------- inputs


def alias_bomb(levels: int = 7, width: int = 9, indent: str = "") -> str:
    """YAML lines of a list of `levels` nested lists, each of `width` aliases of the one before: width^levels values
    in a few hundred bytes (9^7: 4.8 million, over hypvl.yaml_text.MAX_VALUES, 10^6; the report's 9^9 walked for
    minutes)."""
    lines = [f"{indent}- &l0 [{', '.join(['x'] * width)}]"]
    lines += [f"{indent}- &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def pilot_world_at_full_scale(tmp_path):
    """`hypvl pilot-world --configfile pilot.yaml --configfile full.yaml` (the wrong order: full.yaml's scale and
    data_dir, pilot.yaml's world), its folders moved under tmp_path."""
    folders = write(tmp_path / "folders.yaml", yaml.safe_dump({
        "data_dir": str(tmp_path / "data" / "full"), "results_dir": str(tmp_path / "results"),
        "fetch": {"mirror": str(tmp_path / "mirror"), "sources": str(tmp_path / "mirror" / "sources.yaml")}}))
    argv = ["pilot-world", *(f"--configfile={path}" for path in (REPO / "workflows/config/pilot.yaml",
                                                                  REPO / "workflows/config/full.yaml", folders))]
    named = f"{REPO}/workflows/config/pilot.yaml + {REPO}/workflows/config/full.yaml"
    return argv, named, r"config key pilot_world: the pilot world belongs to scale 'pilot', not 'full' " \
        r"\(data_dir .*data/full\); refused", [tmp_path / "data", tmp_path / "mirror"]


def derived_batch_over_a_million(tmp_path):
    """`hypvl train` of a paper-batch-2048 experiment at `train.batch_size_scale: 1000` (each in range alone): a batch
    of 2,048,000."""
    config = write(tmp_path / "config.yaml", yaml.safe_dump({"data_dir": str(tmp_path / "data"),
                                                             "train": {"batch_size_scale": 1000}}))
    out = tmp_path / "model"
    argv = ["train", "--spec", "replication/meru.yaml", "--experiment", "meru_clip_vits", "--configfile",
            str(config), "--out", str(out), "--quiet"]
    return argv, "train.batch_size_scale 1000", r"the batch 2048 x train\.batch_size_scale 1000 is 2\.048e\+06, " \
        r"over the most a run takes \(1e\+06\); refused", [out / "checkpoint.pt"]


def float_tiff(tmp_path):
    """An image folder whose first image is a float TIFF of pixels 0 to 300 (no known range: PIL reads it all
    black, the float values clipped at 1)."""
    path, _, _ = BUILDERS["imagefolder"](tmp_path)
    image = min(path.rglob("*.png"))
    buffer = io.BytesIO()
    Image.fromarray(np.linspace(0, 300, 36, dtype=np.float32).reshape(6, 6)).save(buffer, "TIFF")
    image.write_bytes(buffer.getvalue())
    return ["data", "check", "imagefolder", str(path)], image, \
        r"image refused: float pixels from 0 to 300, outside \[0, 1\]", []


def spec_bomb(text: str) -> str:
    """The fixture spec with an alias bomb in tiny_clip's overrides (`hypvl coverage` walked one into a
    MemoryError after 106 s)."""
    return text.replace("    overrides: {steps: 10}\n", "    overrides:\n      steps: 10\n      x:\n"
                        + alias_bomb(indent="        "), 1)


def manifest_bomb(tmp_path):
    """`hypvl acquire x --sources` of a manifest holding an alias bomb in its dataset's notes."""
    text = "datasets:\n  x:\n    files: []\n    notes:\n" + alias_bomb(indent="      ")
    path = write(tmp_path / "sources.yaml", text)
    dest = tmp_path / "dest"
    return ["acquire", "x", "--dest", str(dest), "--sources", str(path)], path, \
        "cannot read the acquisition manifest: YAML aliases expand to more than 1000000 values", [dest]


CASES = {
    # configs: the scale's data, numbers and their products bounded, aliases bounded
    "config_pilot_world_at_full_scale": pilot_world_at_full_scale,
    "config_batch_size_scale_over_a_million": config_case("train: {batch_size_scale: 1.0e+9}\n",
                                                          r"train\.batch_size_scale: 1000000000\.0 is greater than the "
                                                          r"maximum of 1000000"),
    "config_backbone_depth_unbounded": config_case("model: {backbones: {vit_s16: {depth: 100000000}}}\n",
                                                   r"depth: 100000000 is greater than the maximum of 1024"),
    "config_alias_bomb": config_case("regression_extras:\n  bomb:\n" + alias_bomb(indent="    "),
                                     r"config\.yaml: YAML aliases expand to more than 1000000 values"),
    "train_derived_batch_over_a_million": derived_batch_over_a_million,
    # specs and manifests
    "spec_alias_bomb_in_overrides": spec_text_case(spec_bomb, r"YAML aliases expand to more than 1000000 values"),
    "spec_tolerance_1e300": spec_case(lambda d: d["tables"]["table1"].update(tolerance=1e300),
                                      r"tolerance: 1e\+300 is greater than the maximum of 100"),
    "finetune_lr_over_10": finetune_case({"lr": 1e6}, "", r"override lr must be at most 10, got 1000000\.0",
                                         named="spec"),
    "manifest_alias_bomb": manifest_bomb,
    # counts read from files, checked before they size anything
    "clip_benchmark_nshards_10_to_the_11": format_case(
        "clip_benchmark_wds", lambda p: write(p / "test" / "nshards.txt", "100000000000\n"),
        r"announces 100000000000 shards but .*3\.tar is missing"),
    "grounded_numparents_negative": shard_member_case("grounded", lambda m: m.update({"numparents.txt": b"-1"}),
                                                      r"numparents\.txt says -1 boxes"),
    # images of more than 8 bits
    "image_float_tiff_out_of_range": float_tiff,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_refused_in_one_line(name, tmp_path, capsys, monkeypatch):
    refused_in_one_line(CASES[name], tmp_path, capsys, monkeypatch)
