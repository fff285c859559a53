"""Resuming: a training run killed with SIGKILL and started again ends bitwise equal to an uninterrupted run (CPU);
a resume checkpoint of another recipe is kept aside with a warning, one of another data-parallel layout refused."""

import json
import logging
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import torch
import yaml

from helpers import REPO
from helpers.models import TINY
from helpers.train_stream import _shards
from helpers.training import TRAIN_CFG
from hypvl.errors import InputError
from hypvl.train.resume import RESUME, fingerprint, run_recipe, save_resume
from hypvl.train.trainer import train

STEPS = 30


def _command(tmp_path, out):
    config = {"data_dir": str(tmp_path / "data"), "corpora": {"grit": "train"},
              "model": {**TINY, "backbones": {"vit_s16": TINY["backbones"]["vit_s16"]}},
              "train": {"steps": STEPS, "batch_size_scale": 4 / 768, "checkpoint_every": 1, "shuffle_buffer": 4}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    return [sys.executable, "-m", "hypvl.cli", "train", "--spec", str(REPO / "replication" / "hycoclip.yaml"),
            "--experiment", "hyco_hycoclip_vits_grit", "--configfile", str(tmp_path / "config.yaml"), "--out", str(out),
            "--quiet"]


def _written(path) -> int:
    return path.stat().st_mtime_ns if path.exists() else 0


def _killed_once(command, out, rng: random.Random) -> bool:
    """Start the run and SIGKILL it at a random moment after it wrote a resume checkpoint; False if it ended first."""
    before = _written(out / RESUME)
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while _written(out / RESUME) == before and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(rng.uniform(0.0, 0.2))
    if process.poll() is not None:
        return False
    process.send_signal(signal.SIGKILL)
    process.wait()
    return True


@pytest.mark.slow
def test_a_run_killed_at_any_step_and_restarted_ends_bitwise_equal(tmp_path):
    _shards(tmp_path / "data" / "train", n=24, boxes=lambda i: 1 + i % 3)
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert subprocess.run(_command(tmp_path, whole), capture_output=True, timeout=300).returncode == 0
    rng = random.Random(os.getpid())
    kills = sum(_killed_once(_command(tmp_path, cut), cut, rng) for _ in range(2))
    run = subprocess.run(_command(tmp_path, cut), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    summary = json.loads((cut / "train_summary.json").read_text())
    assert kills >= 1 and summary["resumed_at_step"] >= 1
    assert (cut / "train_log.csv").read_bytes() == (whole / "train_log.csv").read_bytes()
    a, b = (torch.load(folder / "checkpoint.pt", weights_only=True) for folder in (whole, cut))
    assert a["model"].keys() == b["model"].keys() and all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    reference = json.loads((whole / "train_summary.json").read_text())
    assert {k: v for k, v in summary.items() if k not in ("seconds", "resumed_at_step")} == \
        {k: v for k, v in reference.items() if k not in ("seconds", "resumed_at_step")}
    assert not (cut / RESUME).exists()  # removed once the outputs are written


def test_a_resume_checkpoint_of_another_recipe_is_kept_aside_and_another_layout_refused(tmp_path, caplog):
    shards = _shards(tmp_path / "data", n=12, boxes=lambda i: 1)
    exp = {"id": "t", "method": "meru", "backbone": "vit_s16", "seed": 0}
    reference = train(exp, TINY, TRAIN_CFG, shards, tmp_path / "a", progress=False)
    theirs = run_recipe({**exp, "id": "u"}, TINY, {**TRAIN_CFG, "lr": 1e-3}, shards)
    stale = {"recipe": theirs, "fingerprint": fingerprint(theirs), "layout": {"world": 1, "workers": 0}, "step": 2,
             "model": {}, "optimizer": {}, "scheduler": {}, "scaler": {}, "streams": [{}], "rows": [], "seconds": 0.0}
    save_resume(tmp_path / "b" / RESUME, stale)
    written = (tmp_path / "b" / RESUME).read_bytes()
    (tmp_path / "b" / f"resume.{fingerprint(theirs)[:12]}.pt").write_bytes(b"an earlier one: not overwritten")
    with caplog.at_level(logging.WARNING, logger="hypvl"):
        again = train(exp, TINY, TRAIN_CFG, shards, tmp_path / "b", progress=False)
    assert again["resumed_at_step"] is None and again["final"] == reference["final"]
    ours = fingerprint(run_recipe(exp, TINY, TRAIN_CFG, shards))
    aside = tmp_path / "b" / f"resume.{fingerprint(theirs)[:12]}-2.pt"
    assert aside.read_bytes() == written and not (tmp_path / "b" / RESUME).exists()
    assert (tmp_path / "b" / f"resume.{fingerprint(theirs)[:12]}.pt").read_bytes() == b"an earlier one: not overwritten"
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert f"another recipe (experiment 'u', fingerprint {fingerprint(theirs)[:12]}, step 2)" in warning
    assert f"this run's (experiment 't', fingerprint {ours[:12]})" in warning
    assert 'experiment.id: "u" vs "t"' in warning and "train.lr: 0.001 vs 0.0005" in warning
    assert warning.endswith(f"kept aside as {aside.name}, training from step 0")
    other_layout = {**stale, "fingerprint": ours, "layout": {"world": 4, "workers": 2}}
    save_resume(tmp_path / "c" / RESUME, other_layout)
    with pytest.raises(InputError, match=f"{RESUME}: written by 4 process\\(es\\) with 2 loader worker\\(s\\) each; "
                                         "this run has 1 with 0"):
        train(exp, TINY, TRAIN_CFG, shards, tmp_path / "c", progress=False)


def test_a_run_resumes_across_settings_that_move_its_numbers_by_rounding_only(tmp_path):
    """Micro-batches, compiled encoders and another attention kernel compute the same step up to float rounding
    (tests/training/test_accumulation.py, test_train_step.py): a run started with or without them resumes under the
    others; the precision or the learning rate make another recipe."""
    shards = _shards(tmp_path, n=4)
    exp = {"id": "t", "method": "meru", "backbone": "vit_s16", "seed": 0}
    ours = fingerprint(run_recipe(exp, TINY, TRAIN_CFG, shards))
    rounding = {"accum_steps": 2, "compile": True, "attention": "math", "checkpoint_every": 5}
    assert fingerprint(run_recipe(exp, TINY, {**TRAIN_CFG, **rounding}, shards)) == ours
    for other in ({"precision": "bf16"}, {"lr": 1e-3}):
        assert fingerprint(run_recipe(exp, TINY, {**TRAIN_CFG, **other}, shards)) != ours
