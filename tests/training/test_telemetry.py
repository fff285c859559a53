"""Telemetry (`hypvl.train.telemetry`): every logged scalar reaches TensorBoard (read back) and W&B, progress lines
reach a job's log under --quiet, train_log.csv holds a killed run's steps and a resumed run continues it and the
event file without a step twice or missing; and none of it changes a number of the run."""

import csv
import logging
import re
import signal
import subprocess
import sys
import time
import types

import pytest
import torch
import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from helpers import REPO
from helpers.models import TINY
from helpers.radial import align, base_checkpoint
from helpers.training import TRAIN_CFG, _shards
from hypvl.errors import InputError
from hypvl.train import telemetry as telemetry_module, trainer
from hypvl.train.resume import RESUME
from hypvl.train.telemetry import (
    GPU_MEMORY,
    IMAGES_PER_S,
    INPUT_WAIT,
    LOG_NAME,
    TAGS,
    Telemetry,
    TENSORBOARD_DIR,
    check_telemetry,
)
from hypvl.train.trainer import train

EXP = {"id": "t", "method": "meru", "backbone": "vit_s16", "seed": 0}
OFF = TRAIN_CFG["telemetry"]
WATCHED = {"log_every": 2, "tensorboard": True, "wandb": None}


def _rows(folder) -> list[dict]:
    with open(folder / LOG_NAME, newline="") as handle:
        return list(csv.DictReader(handle))


def _scalars(folder) -> dict[str, list[tuple[int, float]]]:
    """Tag -> (step, value) of every scalar in the run's event files, as TensorBoard shows them."""
    events = EventAccumulator(str(folder / TENSORBOARD_DIR))
    events.Reload()
    return {tag: [(event.step, event.value) for event in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def _weights(folder) -> dict:
    return torch.load(folder / "checkpoint.pt", weights_only=True)["model"]


class FakeWandb(types.SimpleNamespace):
    """The part of the wandb module a run uses, recording its calls (wandb itself is not needed offline)."""

    def __init__(self):
        super().__init__(errors=types.SimpleNamespace(Error=RuntimeError), started=[], logged=[], finished=[])

    def init(self, **settings):
        self.started.append(settings)
        return types.SimpleNamespace(log=lambda scalars, step: self.logged.append((step, scalars)),
                                     finish=lambda exit_code: self.finished.append(exit_code))


def test_every_scalar_reaches_tensorboard_and_wandb_and_progress_lines_and_no_number_moves(tmp_path, monkeypatch,
                                                                                           caplog):
    shards = _shards(tmp_path / "data", boxes=lambda i: 1)
    wandb = FakeWandb()
    monkeypatch.setitem(sys.modules, "wandb", wandb)
    project = {"project": "hyperbolic", "entity": None, "mode": "offline"}
    cfg = {**TRAIN_CFG, "steps": 4, "telemetry": {**WATCHED, "wandb": project}}
    with caplog.at_level(logging.INFO, logger="hypvl"):
        watched = train(EXP, TINY, cfg, shards, tmp_path / "on", progress=False)
    plain = train(EXP, TINY, {**cfg, "telemetry": OFF}, shards, tmp_path / "off", progress=False)
    assert watched["final"] == plain["final"]
    assert (tmp_path / "on" / LOG_NAME).read_bytes() == (tmp_path / "off" / LOG_NAME).read_bytes()
    a, b = _weights(tmp_path / "on"), _weights(tmp_path / "off")
    assert all(torch.equal(a[key], b[key]) for key in a)
    assert not (tmp_path / "off" / TENSORBOARD_DIR).exists()

    rows = _rows(tmp_path / "on")
    logged = {key for key in TAGS if rows[0][key] != ""}
    assert logged == {"loss", "contrastive", "entailment", "lr", "curvature", "temperature"}  # MERU's
    scalars = _scalars(tmp_path / "on")
    assert set(scalars) == {TAGS[key] for key in logged} | {IMAGES_PER_S, INPUT_WAIT}  # no GPU memory on the CPU
    for key in logged:
        assert [step for step, _ in scalars[TAGS[key]]] == [0, 1, 2, 3]
        assert [value for _, value in scalars[TAGS[key]]] == pytest.approx([float(r[key]) for r in rows], rel=1e-6)
    assert all(value > 0 for _, value in scalars[IMAGES_PER_S])
    assert [step for step, _ in scalars[INPUT_WAIT]] == [0, 1, 2, 3]
    assert all(0 <= value < 1 for _, value in scalars[INPUT_WAIT])

    [started] = wandb.started
    assert {k: started[k] for k in ("project", "entity", "mode", "name", "group")} == {**project, "name": "t",
                                                                                      "group": "t"}
    assert started["config"]["experiment"] == EXP and started["config"]["train"]["steps"] == 4
    assert [step for step, _ in wandb.logged] == [0, 1, 2, 3] and wandb.finished == [0]
    for step, values in wandb.logged:
        assert {tag: value for tag, value in values.items() if tag not in (IMAGES_PER_S, INPUT_WAIT)} == \
            pytest.approx({TAGS[key]: float(rows[step][key]) for key in logged}, rel=1e-12)

    lines = [record.getMessage() for record in caplog.records if "ETA" in record.getMessage()]
    assert len(lines) == 2  # every 2 steps, the last included
    for line, done in zip(lines, (2, 4)):
        assert re.fullmatch(rf"t: step {done}/4, loss {float(rows[done - 1]['loss']):.4f}, lr \S+, [\d.]+ images/s, "
                            r"input wait \d+%, elapsed 0:00:\d\d, ETA 0:00:\d\d", line), line
    assert lines[-1].endswith("ETA 0:00:00")


def test_a_failed_run_leaves_its_steps_and_its_resumption_continues_the_log_and_events(tmp_path, monkeypatch):
    shards = _shards(tmp_path / "data", boxes=lambda i: 1)
    cfg = {**TRAIN_CFG, "steps": 6, "checkpoint_every": 2, "telemetry": WATCHED}
    train(EXP, TINY, cfg, shards, tmp_path / "whole", progress=False)

    class FailingAtStep5(trainer.TrainStep):
        def __call__(self, batch):
            self.done = getattr(self, "done", 0) + 1
            if self.done == 6:
                raise RuntimeError("injected failure")
            return super().__call__(batch)

    monkeypatch.setattr(trainer, "TrainStep", FailingAtStep5)
    with pytest.raises(RuntimeError, match="injected failure"):
        train(EXP, TINY, cfg, shards, tmp_path / "cut", progress=False)
    assert _rows(tmp_path / "cut") == _rows(tmp_path / "whole")[:5]  # steps 0-4
    assert (tmp_path / "cut" / RESUME).is_file()  # written after step 4 (steps 0-3)
    monkeypatch.undo()

    again = train(EXP, TINY, cfg, shards, tmp_path / "cut", progress=False)
    assert again["resumed_at_step"] == 4
    assert (tmp_path / "cut" / LOG_NAME).read_bytes() == (tmp_path / "whole" / LOG_NAME).read_bytes()
    cut, whole = _scalars(tmp_path / "cut"), _scalars(tmp_path / "whole")
    assert cut.keys() == whole.keys()
    for tag in cut:  # the failed run's step 4 hidden, replaced by the resumed run's
        assert [step for step, _ in cut[tag]] == [0, 1, 2, 3, 4, 5]
        if tag not in (IMAGES_PER_S, INPUT_WAIT):
            assert cut[tag] == whole[tag]


def test_a_killed_quiet_run_leaves_its_steps_and_progress_lines_in_the_job_log(tmp_path):
    _shards(tmp_path / "data" / "train", n=24, boxes=lambda i: 1 + i % 3)
    steps = 400
    config = {"data_dir": str(tmp_path / "data"), "corpora": {"grit": "train"},
              "model": {**TINY, "backbones": {"vit_s16": TINY["backbones"]["vit_s16"]}},
              "train": {"steps": steps, "batch_size_scale": 4 / 768, "checkpoint_every": 0, "shuffle_buffer": 4,
                        "telemetry": {"log_every": 3, "tensorboard": False}}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    out, job_log = tmp_path / "out", tmp_path / "job.log"
    command = [sys.executable, "-m", "hypvl.cli", "train", "--spec", str(REPO / "replication" / "hycoclip.yaml"),
               "--experiment", "hyco_hycoclip_vits_grit", "--configfile", str(tmp_path / "config.yaml"),
               "--out", str(out), "--quiet"]
    progress = re.compile(rf"hyco_hycoclip_vits_grit: step (\d+)/{steps}, loss \d+\.\d{{4}}, lr \S+, [\d.]+ images/s, "
                          r"input wait \d+%, elapsed \d+:\d\d:\d\d, ETA \d+:\d\d:\d\d")
    with open(job_log, "w") as handle:  # as a workflow job runs it: `> {log} 2>&1`
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 240
        while process.poll() is None and time.monotonic() < deadline and job_log.read_text().count("ETA") < 2:
            time.sleep(0.05)
        assert process.poll() is None, job_log.read_text()[-2000:]
        process.send_signal(signal.SIGKILL)
        process.wait()
    text = job_log.read_text()
    lines = [line for line in text.splitlines() if "ETA" in line]
    assert len(lines) >= 2 and "\r" not in text, text[-2000:]  # plain lines, no progress bar
    assert [int(progress.fullmatch(line).group(1)) for line in lines] == list(range(3, 3 * len(lines) + 1, 3))
    rows = _rows(out)  # at least the steps the last line reported, every row whole
    assert len(rows) >= 3 * len(lines) and [int(row["step"]) for row in rows] == list(range(len(rows)))
    assert all(float(row["loss"]) > 0 and float(row["temperature"]) > 0 for row in rows)
    assert not (out / "checkpoint.pt").exists()


def test_on_a_gpu_the_peak_memory_is_a_scalar_too(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device: 3 * 2**30 if device.type == "cuda" else 0)
    with Telemetry(tmp_path, WATCHED, "t", 2, 8, torch.device("cuda"), progress=False) as telemetry:
        telemetry.record({"step": 0, "loss": 1.0, "contrastive": 1.0, "lr": 0.1, "temperature": 0.07})
    assert _scalars(tmp_path)[GPU_MEMORY] == [(0, 3.0)]


class FakeClock:
    """`time` for the telemetry module: a clock that moves only when told."""

    def __init__(self):
        self.now = 100.0

    def perf_counter(self) -> float:
        return self.now


def test_the_input_wait_is_the_share_of_each_step_spent_in_the_loaders_next(tmp_path, monkeypatch, caplog):
    """Batches that take 3 s each to arrive, steps of 1 s: every step waited 3/4 of its time, in TensorBoard and in
    the progress lines; images/s counts the wait too. Without timed batches there is no such scalar."""
    clock = FakeClock()
    monkeypatch.setattr(telemetry_module, "time", clock)

    def slow_batches():
        for step in range(4):
            clock.now += 3.0  # the loader's processes have nothing ready
            yield step

    with caplog.at_level(logging.INFO, logger="hypvl"), \
            Telemetry(tmp_path, WATCHED, "t", 4, 8, torch.device("cpu"), progress=False) as telemetry:
        for step in telemetry.timed(slow_batches()):
            clock.now += 1.0  # the step
            telemetry.record({"step": step, "loss": 1.0, "lr": 0.1})
    scalars = _scalars(tmp_path)
    assert scalars[INPUT_WAIT] == [(step, 0.75) for step in range(4)]
    assert scalars[IMAGES_PER_S] == [(step, 2.0) for step in range(4)]  # 8 images in 4 s
    lines = [record.getMessage() for record in caplog.records if "ETA" in record.getMessage()]
    assert [line.split(", ")[3:5] for line in lines] == [["2.0 images/s", "input wait 75%"]] * 2

    with Telemetry(tmp_path / "untimed", WATCHED, "t", 1, 8, torch.device("cpu"), progress=False) as telemetry:
        telemetry.record({"step": 0, "loss": 1.0, "lr": 0.1})
    assert INPUT_WAIT not in _scalars(tmp_path / "untimed")


@pytest.mark.parametrize("key, module", [("wandb", "wandb"), ("tensorboard", "torch.utils.tensorboard")])
def test_a_backend_configured_but_not_installed_is_one_line_naming_the_key(monkeypatch, key, module):
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    settings = {"log_every": 0, "tensorboard": key == "tensorboard", "wandb": {"project": "p"} if key == "wandb"
                else None}
    with pytest.raises(InputError, match=rf"^config key train\.telemetry\.{key} is set but the {key} package is not "
                                         rf"installed: pip install {key}, or set train\.telemetry\.{key} to "):
        check_telemetry(settings)
    check_telemetry({**settings, "tensorboard": False, "wandb": None})  # nothing asked, nothing needed


def test_a_fine_tuning_reports_its_own_loss_terms(tmp_path):
    """`hypvl finetune` (HierarCaps' alignment) reports as training does: its rows (re_mean, re_minimax, regulariser)
    in train_log.csv and every one of them in TensorBoard."""
    align(tmp_path, base_checkpoint(tmp_path), telemetry=WATCHED, lambda_reg=0.5)
    rows = _rows(tmp_path / "out")
    assert [int(row["step"]) for row in rows] == [0, 1, 2]  # 5 rows in batches of 2
    logged = {key for key in rows[0] if key != "step" and rows[0][key] != ""}
    assert logged == {"loss", "re_mean", "re_minimax", "regulariser", "lr"}
    scalars = _scalars(tmp_path / "out")
    tags = {key: TAGS.get(key, f"loss/{key}") for key in logged}
    assert set(scalars) == set(tags.values()) | {IMAGES_PER_S}
    for key, tag in tags.items():
        assert scalars[tag] == [(step, pytest.approx(float(row[key]), rel=1e-6)) for step, row in enumerate(rows)]
