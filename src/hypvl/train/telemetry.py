"""What a training run reports as it goes, from the main process only (`train.telemetry`):

- `train_log.csv`: a row per step (its loss terms, the learning rate it trained with, the learned scalars after it;
  PoinCLIP's also how its pairs were ordered), appended and flushed as the step ends, so a killed run leaves its
  steps so far. A resumed run rewrites the file with the rows of its resume checkpoint and appends from there: no
  row twice, none missing.
- TensorBoard (`tensorboard: true`): every step's scalars, images/s, the share of the step's time spent waiting
  for its batch (where the run's batches come through `timed`: the loader processes falling behind the step) and,
  on a GPU, the peak memory, through torch.utils.tensorboard into `<out>/tensorboard` (a resumed run hides what the
  killed one logged after its checkpoint: `purge_step`).
- Weights & Biases (`wandb: {project, entity, mode}`): the same scalars; each start of a run (a resumed one too) is
  a W&B run of its own, grouped under the experiment, logging at the run's global steps.
- Progress: a bar on an interactive terminal; otherwise (a workflow job's log, `--quiet`) a plain line every
  `log_every` steps and at the last, with the step, loss, learning rate, images/s, the input wait, elapsed time and
  an ETA.

Nothing here changes the training's arithmetic or random state: it reads the rows the trainer computed.
"""

import csv
import datetime
import importlib
import logging
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import torch
from tqdm import tqdm

from hypvl.errors import InputError
from hypvl.io import atomic_write

LOG_NAME = "train_log.csv"
TENSORBOARD_DIR = "tensorboard"
# apex_rate, apex_radius_agreement: PoinCLIP's pair order (`hypvl.losses.poinclip.apex_statistics`)
LOG_FIELDS = ("step", "loss", "contrastive", "entailment", "syntax", "lr", "curvature", "temperature", "apex_rate",
              "apex_radius_agreement")
# log field -> its scalar's name in TensorBoard and W&B (another loss term: loss/<field>); and the measured ones
TAGS = {"loss": "loss/total", "contrastive": "loss/contrastive", "entailment": "loss/entailment",
        "syntax": "loss/syntax", "lr": "lr", "curvature": "model/curvature", "temperature": "model/temperature",
        "apex_rate": "entailment/apex_rate", "apex_radius_agreement": "entailment/apex_radius_agreement"}
IMAGES_PER_S, INPUT_WAIT, GPU_MEMORY = "speed/images_per_s", "speed/input_wait", "memory/gpu_peak_gib"

log = logging.getLogger(__name__)


def check_telemetry(settings: dict) -> None:
    """InputError naming the config key when a configured backend's package is not installed (every process calls
    it before any work, so a data-parallel run stops whole)."""
    wanted = {"tensorboard": settings["tensorboard"], "wandb": settings["wandb"] is not None}
    for key, module in (("tensorboard", "torch.utils.tensorboard"), ("wandb", "wandb")):
        if wanted[key]:
            try:
                importlib.import_module(module)
            except ImportError:
                raise InputError(f"config key train.telemetry.{key} is set but the {key} package is not installed: "
                                 f"pip install {key}, or set train.telemetry.{key} to "
                                 f"{'false' if key == 'tensorboard' else 'null'}") from None


class Telemetry:
    """The reporting of one run on one process (a context: closed at the end of the run, or when it fails). `start`
    is the run's first step here, `rows` the log rows of the steps before it, `before` their seconds; `config` is
    what W&B records of the run, `fields` the columns of a log row. On other processes than the main one (`main`),
    nothing is reported."""

    def __init__(self, out_dir: Path, settings: dict, name: str, steps: int, batch_size: int, device: torch.device,
                 start: int = 0, rows: list | None = None, before: float = 0.0, config: dict | None = None,
                 progress: bool = True, main: bool = True, fields: tuple[str, ...] = LOG_FIELDS):
        self.batch_size, self.device = batch_size, torch.device(device)
        self.tags = {field: TAGS.get(field, f"loss/{field}") for field in fields if field != "step"}
        self.sinks, self.waits = [], InputWait()
        if not main:
            return
        if settings["wandb"] is not None:  # first: the one that may fail to start
            self.sinks.append(WandB(settings["wandb"], Path(out_dir), name, config or {}))
        self.sinks.append(CsvLog(Path(out_dir) / LOG_NAME, rows or [], fields))
        if settings["tensorboard"]:
            self.sinks.append(TensorBoard(Path(out_dir) / TENSORBOARD_DIR, start))
        if progress and sys.stderr.isatty():
            self.sinks.append(Bar(name, steps, start))
        elif settings["log_every"]:
            self.sinks.append(Lines(name, steps, start, before, settings["log_every"], batch_size, self.waits))
        self.last, self.waited = time.perf_counter(), 0.0

    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace):
        for sink in self.sinks:
            sink.close(failed=kind is not None)

    def timed(self, batches: Iterable) -> Iterator:
        """`batches`, the wait for each timed (`InputWait`)."""
        return self.waits.timed(batches)

    def record(self, row: dict) -> None:
        """Report the log row of the step just trained."""
        if not self.sinks:
            return
        now = time.perf_counter()
        scalars = {self.tags[key]: value for key, value in row.items() if key in self.tags and value is not None}
        scalars[IMAGES_PER_S] = self.batch_size / max(now - self.last, 1e-9)
        if self.waits.used:
            scalars[INPUT_WAIT] = (self.waits.seconds - self.waited) / max(now - self.last, 1e-9)
        if self.device.type == "cuda":
            scalars[GPU_MEMORY] = torch.cuda.max_memory_allocated(self.device) / 2**30
        self.last, self.waited = now, self.waits.seconds
        for sink in self.sinks:
            sink.record(row, scalars)


class InputWait:
    """The seconds a run has waited for its batches: the time spent in the `next` of the iterator `timed` wraps (a
    DataLoader whose processes have no batch ready yet; the first batch's wait includes their start). On a GPU each
    step ends in a device sync (its log row's values), so the wait is time the GPU had no work."""

    def __init__(self):
        self.seconds, self.used = 0.0, False

    def timed(self, batches: Iterable) -> Iterator:
        self.used = True
        iterator = iter(batches)
        while True:
            began = time.perf_counter()
            try:
                batch = next(iterator)
            except StopIteration:
                return
            self.seconds += time.perf_counter() - began
            yield batch


class CsvLog:
    """train_log.csv: the header and `rows` (the steps before this start) written anew, then a row appended and
    flushed per step (an empty cell: a term the method does not have)."""

    def __init__(self, path: Path, rows: list, fields: tuple[str, ...]):
        with atomic_write(path, newline="") as handle:
            writer = csv.DictWriter(handle, fields, restval="")
            writer.writeheader()
            writer.writerows(rows)
        self.handle = open(path, "a", newline="")  # noqa: SIM115 (closed by close())
        self.writer = csv.DictWriter(self.handle, fields, restval="")

    def record(self, row: dict, scalars: dict) -> None:
        self.writer.writerow(row)
        self.handle.flush()

    def close(self, failed: bool) -> None:
        self.handle.close()


class TensorBoard:
    """Scalars to an event file in `logdir`; events a killed run logged from step `start` on are hidden."""

    def __init__(self, logdir: Path, start: int):
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(logdir), purge_step=start)

    def record(self, row: dict, scalars: dict) -> None:
        for tag, value in scalars.items():
            self.writer.add_scalar(tag, value, row["step"])

    def close(self, failed: bool) -> None:
        self.writer.close()


class WandB:
    """Scalars to a Weights & Biases run (`settings`: project, entity, mode online or offline; its files under
    `out_dir`/wandb), named and grouped by the experiment."""

    def __init__(self, settings: dict, out_dir: Path, name: str, config: dict):
        import wandb

        try:
            self.run = wandb.init(project=settings["project"], entity=settings.get("entity"),
                                  mode=settings.get("mode", "online"), name=name, group=name, dir=str(out_dir),
                                  config=config)
        except wandb.errors.Error as exc:
            raise InputError(f"config key train.telemetry.wandb: W&B did not start ({exc})") from None

    def record(self, row: dict, scalars: dict) -> None:
        self.run.log(scalars, step=row["step"])

    def close(self, failed: bool) -> None:
        self.run.finish(exit_code=1 if failed else 0)


class Bar:
    """A progress bar (an interactive terminal)."""

    def __init__(self, name: str, steps: int, start: int):
        self.bar = tqdm(total=steps, initial=start, desc=name, mininterval=2.0)

    def record(self, row: dict, scalars: dict) -> None:
        self.bar.update()
        self.bar.set_postfix(loss=f"{row['loss']:.3f}", refresh=False)

    def close(self, failed: bool) -> None:
        self.bar.close()


class Lines:
    """A plain progress line every `every` steps and at the last (a job's log): images/s and the share of the time
    spent waiting for input (`waits`, where the batches are timed) over the steps since the previous line, the ETA at
    this process's pace so far."""

    def __init__(self, name: str, steps: int, start: int, before: float, every: int, batch_size: int,
                 waits: InputWait):
        self.name, self.steps, self.start, self.before, self.every = name, steps, start, before, every
        self.batch_size, self.waits = batch_size, waits
        self.began = self.since = time.perf_counter()
        self.done = self.since_step = start
        self.since_waited = 0.0

    def record(self, row: dict, scalars: dict) -> None:
        self.done = row["step"] + 1
        if self.done % self.every and self.done != self.steps:
            return
        now = time.perf_counter()
        speed = (self.done - self.since_step) * self.batch_size / max(now - self.since, 1e-9)
        wait = (f", input wait {(self.waits.seconds - self.since_waited) / max(now - self.since, 1e-9):.0%}"
                if self.waits.used else "")
        eta = (self.steps - self.done) * (now - self.began) / (self.done - self.start)
        log.info("%s: step %d/%d, loss %.4f, lr %.3g, %.1f images/s%s, elapsed %s, ETA %s", self.name, self.done,
                 self.steps, row["loss"], row["lr"], speed, wait, _duration(self.before + now - self.began),
                 _duration(eta))
        self.since, self.since_step, self.since_waited = now, self.done, self.waits.seconds

    def close(self, failed: bool) -> None:
        pass


def _duration(seconds: float) -> str:
    """Seconds as [D day(s), ]H:MM:SS."""
    return str(datetime.timedelta(seconds=round(seconds)))
