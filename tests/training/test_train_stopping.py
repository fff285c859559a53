"""A training run asked to stop by a signal (SIGTERM: a cluster's time limit, preemption, scancel; SIGINT: Ctrl-C)
ends its step, writes resume.pt, exits 128 + the signal with one line, and the same command ends bitwise equal to an
uninterrupted run (CPU); under torchrun too, and the ranks stop at one step whichever of them got the signal."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import torch
import torch.multiprocessing as mp
import yaml

from helpers import REPO
from helpers.distributed import WORLD, _free_port, join_gloo
from helpers.models import TINY
from helpers.train_stream import _shards
from hypvl.train import distributed
from hypvl.train.resume import RESUME
from hypvl.train.stopping import StopSignals, ignore_in_loader
from hypvl.train.trainer import _averaged_terms

STEPS = 40
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2"]


def _command(tmp_path, out, launcher=(), workers=2):
    config = {"data_dir": str(tmp_path / "data"), "corpora": {"grit": "train"}, "cpu_code_path": "native",
              "model": {**TINY, "backbones": {"vit_s16": TINY["backbones"]["vit_s16"]}},
              "train": {"steps": STEPS, "batch_size_scale": 8 / 768, "checkpoint_every": 1000, "shuffle_buffer": 4,
                        "num_workers": workers}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    hypvl = [*launcher, "-m", "hypvl.cli"] if launcher else [sys.executable, "-m", "hypvl.cli"]
    return [*hypvl, "train", "--spec", str(REPO / "replication" / "hycoclip.yaml"), "--experiment",
            "hyco_hycoclip_vits_grit", "--configfile", str(tmp_path / "config.yaml"), "--out", str(out), "--quiet"]


def _rows(out) -> int:
    log = out / "train_log.csv"
    return max(len(log.read_text().splitlines()) - 1, 0) if log.exists() else 0


def _stopped(command, out, number, tmp_path) -> subprocess.CompletedProcess:
    """Run `command` in a process group of its own and send `number` to the whole group (as a terminal's Ctrl-C or a
    cluster's time limit reaches every process of the job, loader processes included) once it has logged 3 steps."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                               start_new_session=True)
    deadline = time.monotonic() + 240
    while _rows(out) < 3 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before the signal"
    os.killpg(process.pid, number)
    stdout, stderr = process.communicate(timeout=120)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _same_run(whole, cut) -> None:
    """The stopped-and-continued run `cut` ended as the uninterrupted `whole`: log, weights and summary."""
    assert (cut / "train_log.csv").read_bytes() == (whole / "train_log.csv").read_bytes()
    a, b = (torch.load(folder / "checkpoint.pt", weights_only=True)["model"] for folder in (whole, cut))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    summaries = [json.loads((folder / "train_summary.json").read_text()) for folder in (whole, cut)]
    assert [{k: v for k, v in s.items() if k not in ("seconds", "resumed_at_step")} for s in summaries] == \
        [{k: v for k, v in summaries[0].items() if k not in ("seconds", "resumed_at_step")}] * 2
    assert not (cut / RESUME).exists()


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The corpus and the uninterrupted run of one process, shared by the stopped runs."""
    folder = tmp_path_factory.mktemp("stopping")
    _shards(folder / "data" / "train", n=24, boxes=lambda i: 1 + i % 3)
    assert subprocess.run(_command(folder, folder / "whole"), capture_output=True, timeout=300).returncode == 0
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_a_run_stopped_by_a_signal_saves_its_step_and_the_same_command_ends_bitwise_equal(uninterrupted, number):
    tmp_path, whole = uninterrupted, uninterrupted / "whole"
    cut = tmp_path / f"cut_{number.name}"
    stopped = _stopped(_command(tmp_path, cut), cut, number, tmp_path)
    assert stopped.returncode == 128 + number, stopped.stderr[-2000:]
    last = stopped.stderr.strip().splitlines()[-1]
    found = re.fullmatch(rf"hypvl train: experiment 'hyco_hycoclip_vits_grit': stopped by {number.name} after step "
                         rf"(\d+) of {STEPS}; \S+/{RESUME} holds the run: the same command continues it", last)
    assert found, stopped.stderr[-2000:]
    step = int(found.group(1))
    assert "Traceback" not in stopped.stderr and 3 <= step < STEPS
    assert torch.load(cut / RESUME, weights_only=False)["step"] == step == _rows(cut)  # no step lost, none twice
    assert not (cut / "checkpoint.pt").exists()
    again = subprocess.run(_command(tmp_path, cut), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads((cut / "train_summary.json").read_text())["resumed_at_step"] == step
    _same_run(whole, cut)


@pytest.mark.slow
def test_torchrun_stopped_by_sigterm_stops_every_rank_at_one_step_and_continues_bitwise(tmp_path):
    """SIGTERM to torchrun's whole group (SLURM's time limit): each rank gets it twice (directly, and from torchrun)."""
    _shards(tmp_path / "data" / "train", n=24, boxes=lambda i: 1 + i % 3)
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    launcher = [*TORCHRUN, "--master-port", str(_free_port())]
    run = subprocess.run(_command(tmp_path, whole, launcher, workers=1), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    stopped = _stopped(_command(tmp_path, cut, launcher, workers=1), cut, signal.SIGTERM, tmp_path)
    assert stopped.returncode != 0
    steps = {int(n) for n in re.findall(rf"stopped by (?:SIGTERM|another process's signal) after step (\d+) of "
                                         rf"{STEPS}", stopped.stderr)}
    assert len(steps) == 1, stopped.stderr[-3000:]  # both ranks said so, at the same step
    assert torch.load(cut / RESUME, weights_only=False)["step"] == steps.pop() == _rows(cut)
    launcher = [*TORCHRUN, "--master-port", str(_free_port())]
    again = subprocess.run(_command(tmp_path, cut, launcher, workers=1), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    _same_run(whole, cut)


def _agreeing_rank(rank: int, port: int, out: str) -> None:
    """Rank 1 alone was signalled; both ranks average the same terms and both stop."""
    ranks, _ = join_gloo(rank, port, WORLD)
    try:
        terms = {"loss": torch.tensor(1.0 + rank), "contrastive": torch.tensor(3.0 * rank)}
        averaged, stop = _averaged_terms(terms, ranks, signal.SIGTERM if rank == 1 else None)
        torch.save({"terms": {k: v.item() for k, v in averaged.items()}, "stop": stop}, f"{out}/rank{rank}.pt")
    finally:
        distributed.stop(ranks)


def test_every_rank_stops_when_one_was_signalled_and_the_terms_are_the_global_batchs(tmp_path):
    mp.spawn(_agreeing_rank, args=(_free_port(), str(tmp_path)), nprocs=WORLD, join=True)
    results = [torch.load(tmp_path / f"rank{rank}.pt") for rank in range(WORLD)]
    assert results[0] == results[1] == {"terms": {"loss": 1.5, "contrastive": 1.5}, "stop": True}


def test_one_process_stops_only_when_signalled():
    ranks = type("Ranks", (), {"world": 1})()
    terms = {"loss": torch.tensor(2.0), "entailment": torch.tensor(0.25)}
    for requested in (None, signal.SIGINT):
        averaged, stop = _averaged_terms(terms, ranks, requested)
        assert {k: v.item() for k, v in averaged.items()} == {"loss": 2.0, "entailment": 0.25}
        assert stop is (requested is not None)


def test_stop_signals_note_the_first_ignore_a_repeated_sigterm_and_stop_at_a_second_ctrl_c():
    before = {number: signal.getsignal(number) for number in (signal.SIGTERM, signal.SIGINT)}
    with StopSignals() as signals:
        assert signals.requested is None
        os.kill(os.getpid(), signal.SIGTERM)
        assert signals.requested == signal.SIGTERM
        os.kill(os.getpid(), signal.SIGTERM)  # torchrun passing the cluster's on: still running
        assert signals.requested == signal.SIGTERM
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    assert {number: signal.getsignal(number) for number in before} == before


def test_a_loader_process_outlives_ctrl_c_and_a_first_sigterm_and_ends_at_a_second():
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the loader process
        try:
            ignore_in_loader(0)
            for number in (signal.SIGTERM, signal.SIGINT, signal.SIGINT):
                os.kill(os.getpid(), number)
            os.write(write, b"alive")
            os.kill(os.getpid(), signal.SIGTERM)  # as PyTorch's shutdown terminates a loader process
            time.sleep(30)
        finally:
            os._exit(7)
    os.close(write)
    assert os.read(read, 5) == b"alive"
    _, status = os.waitpid(child, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM


def test_the_resume_write_benchmark_writes_what_the_trainer_saves(tmp_path):
    """benchmarks/resume_save.py at paper size (ViT-S/16): the model and AdamW's two moments, 12 bytes a parameter,
    written and flushed; the scratch folder is gone afterwards."""
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "resume_save.py"), "--backbones", "vit_s16",
                           "--repeats", "1", "--dir", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    row = re.fullmatch(r"\| vit_s16 \| (\d+) M \| ([\d.]+) GB \| ([\d.]+) s \| ([\d.]+) s \|",
                       done.stdout.strip().splitlines()[-1])
    assert row, done.stdout
    params, size = int(row.group(1)) * 1e6, float(row.group(2)) * 1e9
    assert 11.8 < size / params < 12.2 and float(row.group(3)) > 0 and float(row.group(4)) > 0
    assert list(tmp_path.iterdir()) == []
