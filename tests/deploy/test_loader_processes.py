"""DataLoader worker processes: the training stream and an evaluation refused before their workers start where
/dev/shm cannot hold their batches, and a worker that dies (a bus error: what a full /dev/shm does to it) one line
naming the setting, in training and in evaluation, with the training steps so far kept."""

import csv
import os
import re
import signal
import time
import types

import pytest
import torch
import yaml

from helpers import REPO
from helpers.evaluation import SIZE, random_image, tiny
from helpers.models import TINY
from helpers.train_stream import _shards, _stream, _take
from helpers.training import TRAIN_CFG
from helpers.trust import evaluate_argv, one_line
from hypvl.cli import main
from hypvl.data.formats.imagefolder import load_image
from hypvl.data.transforms import to_uint8_batch
from hypvl.errors import InputError
from hypvl.evaluate.features import check_loader_memory, image_embeddings, set_loader_workers
from hypvl.runtime import loader_processes
from hypvl.train import data
from hypvl.train.trainer import train

PARENT = os.getpid()


def _bus_error_in_a_worker() -> None:
    """What a loader process gets from the kernel when /dev/shm is full: SIGBUS (never in this, the test's process)."""
    if os.getpid() != PARENT:
        os.kill(os.getpid(), signal.SIGBUS)


def _free(monkeypatch, pages: int, asked: list | None = None) -> None:
    """/dev/shm with `pages` bytes free, each look recorded in `asked`."""
    monkeypatch.setattr(loader_processes.os, "statvfs", lambda path: (asked if asked is not None else []).append(path)
                        or types.SimpleNamespace(f_bavail=pages, f_frsize=1))


@pytest.mark.parametrize("mode", ["pairs", "compositional"])
def test_the_stream_is_refused_before_its_workers_start_where_shared_memory_cannot_hold_their_batches(
        tmp_path, monkeypatch, mode):
    """A batch's bytes as the check counts them are the stream's batch's own; with 2 loader processes 4 batches
    ahead (and one being read) in each of 3 training processes, 27 batches must fit in /dev/shm's free space, else
    the loader is refused, naming the numbers; in-process streams need none."""
    shards = _shards(tmp_path)
    [batch] = _take(_stream(shards, mode), 1)
    size = sum(batch[key].nbytes for key in ("images", "tokens", "box_images", "box_tokens") if key in batch)
    assert _stream(shards, mode).batch_bytes() == size
    asked = []

    def free(pages):
        _free(monkeypatch, pages, asked)

    free(27 * size - 1)
    with pytest.raises(InputError, match=r"^/dev/shm: 0 MiB free, but 3 process\(es\) x 2 loader processes "
                                         r"\(train.num_workers\) x 4 batches ahead hold up to 0 MiB of batches there: "
                                         "lower train.num_workers or the batch, or give the machine more shared "
                                         r"memory \(docker run --shm-size"):
        _stream(shards, mode, workers=2).loader(processes=3)
    free(27 * size)
    assert len(_take(_stream(shards, mode, workers=2), 2, processes=3)) == 2
    asked.clear()
    free(0)
    assert len(_take(_stream(shards, mode), 1, processes=3)) == 1 and not asked


def test_evaluation_loader_processes_are_refused_where_shared_memory_cannot_hold_their_parts(monkeypatch):
    """Batches of 5 images of SIZE px over 2 loader processes are parts of 3 images (what one process's collate
    makes of them); 2 ahead in each process and one more while a batch is gathered, 7 parts must fit; no loader
    processes, nothing checked."""
    part = to_uint8_batch([random_image(torch.Generator().manual_seed(0), SIZE, SIZE)] * 3).nbytes
    assert part == 3 * 3 * SIZE**2
    set_loader_workers(2)
    try:
        _free(monkeypatch, 7 * part - 1)
        with pytest.raises(InputError, match=r"^/dev/shm: 0 MiB free, but 1 process\(es\) x 2 loader processes "
                                             r"\(eval.num_workers\) x 3 parts of a batch ahead hold up to 0 MiB of "
                                             "batches there: lower eval.num_workers or the batch, or give the "
                                             "machine more shared memory"):
            check_loader_memory(5, SIZE)
        _free(monkeypatch, 7 * part)
        check_loader_memory(5, SIZE)
        set_loader_workers(0)
        asked = []
        _free(monkeypatch, 0, asked)
        check_loader_memory(5, SIZE)
        assert not asked
    finally:
        set_loader_workers(0)


def test_an_evaluation_without_the_shared_memory_is_one_line_before_its_first_set(tmp_path, capsys, monkeypatch):
    """`hypvl evaluate` with eval.num_workers loader processes, where /dev/shm holds less than their parts: one line,
    no metrics written."""
    monkeypatch.chdir(REPO)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"eval": {"num_workers": 2}}))
    _free(monkeypatch, 2**20)
    out = tmp_path / "metrics"
    try:
        assert main([*evaluate_argv(tmp_path, out), "--configfile", str(config)]) == 1
    finally:
        set_loader_workers(0)
    assert re.fullmatch(r"hypvl evaluate: /dev/shm: 1 MiB free, but 1 process\(es\) x 2 loader processes "
                        r"\(eval.num_workers\) x 3 parts of a batch ahead hold up to \d+ MiB of batches there: .*",
                        one_line(capsys))
    assert not out.exists() or not list(out.iterdir())


def test_a_training_loader_process_that_dies_is_one_line_and_the_steps_so_far_are_kept(tmp_path, monkeypatch):
    """A worker killed by a bus error at its second batch: the run stops with one line naming train.num_workers,
    PyTorch's reason and where to find shared memory; train_log.csv holds the steps trained before."""
    batches, out = data._Reader.batches, tmp_path / "out"

    def dying(self):
        for count, batch in enumerate(batches(self)):
            if count == 1:  # once the first step is logged (the worker makes batches ahead of the steps)
                deadline = time.monotonic() + 60
                while len((out / "train_log.csv").read_text().splitlines()) < 2 and time.monotonic() < deadline:
                    time.sleep(0.05)
                _bus_error_in_a_worker()
            yield batch

    monkeypatch.setattr(data._Reader, "batches", dying)
    experiment = {"id": "clip_x", "method": "clip", "backbone": "vit_s16", "corpus": "grit", "seed": 0}
    with pytest.raises(InputError) as caught:
        train(experiment, TINY, {**TRAIN_CFG, "num_workers": 1, "steps": 4}, _shards(tmp_path / "shards"),
              out, progress=False)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("a loader process (train.num_workers) died: DataLoader worker (pid")
    assert "is killed by signal: Bus error" in message and "give the machine more shared memory" in message
    with (out / "train_log.csv").open() as handle:
        assert [row["step"] for row in csv.DictReader(handle)] == ["0"]


def test_an_evaluation_loader_process_that_dies_is_one_line(tmp_path):
    """A loader process killed by a bus error while decoding a set's images: one line naming eval.num_workers,
    PyTorch's reason and where to find shared memory."""
    paths = [tmp_path / f"{i}.png" for i in range(6)]
    for i, path in enumerate(paths):
        random_image(torch.Generator().manual_seed(i), 24, 20).save(path)
    model, _ = tiny("meru")

    def load(i):
        if i == 4:
            _bus_error_in_a_worker()
        return load_image(paths[i])

    set_loader_workers(2)
    try:
        with pytest.raises(InputError, match=r"^a loader process \(eval.num_workers\) died: DataLoader worker "
                                             r"\(pid \d+\) is killed by signal: Bus error.*\(lower eval.num_workers"):
            image_embeddings(model, load, 6, lambda image: image.resize((SIZE, SIZE)), 3, "x")
    finally:
        set_loader_workers(0)


def test_other_errors_pass_through_as_they_are():
    """An exception raised inside a worker (PyTorch re-raises it with the worker's traceback) is not a death."""
    raised = RuntimeError("Caught RuntimeError in DataLoader worker process 0.\nOriginal Traceback ...")
    with pytest.raises(RuntimeError) as caught, loader_processes.worker_deaths("train.num_workers"):
        raise raised
    assert caught.value is raised
    with pytest.raises(InputError, match=r"^a loader process \(x\) died: DataLoader worker \(pid\(s\) 7, 9\) exited "
                                         r"unexpectedly$"), loader_processes.worker_deaths("x"):
        raise RuntimeError("DataLoader worker (pid(s) 7, 9) exited unexpectedly")
