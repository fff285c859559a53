"""DataLoader worker processes: the training stream refused before its workers start where /dev/shm cannot hold
their batches, and a worker that dies (a bus error: what a full /dev/shm does to it) one line naming the setting, in
training and in evaluation, with the training steps so far kept."""

import csv
import os
import signal
import time
import types

import pytest
import torch

from hypvl import loader_processes
from hypvl.data.formats.imagefolder import load_image
from hypvl.errors import InputError
from hypvl.evaluate.features import image_embeddings, set_loader_workers
from hypvl.train import data
from hypvl.train.trainer import train

from test_eval_helpers import SIZE, random_image, tiny
from test_models import TINY
from test_train_stream import _shards, _stream, _take
from test_training import TRAIN_CFG

PARENT = os.getpid()


def _bus_error_in_a_worker() -> None:
    """What a loader process gets from the kernel when /dev/shm is full: SIGBUS (never in this, the test's process)."""
    if os.getpid() != PARENT:
        os.kill(os.getpid(), signal.SIGBUS)


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
        monkeypatch.setattr(loader_processes.os, "statvfs", lambda path: asked.append(path) or
                            types.SimpleNamespace(f_bavail=pages, f_frsize=1))

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
