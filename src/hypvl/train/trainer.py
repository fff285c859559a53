"""Train one experiment: seeded, bitwise reproducible on CPU, data-parallel under torchrun, resumable.

One process trains on the whole batch; under `torchrun --nproc-per-node N -m hypvl.cli train ...` each of the N
processes trains on its 1/N of it, the losses seeing the global batch (`hypvl.losses.distributed`) and
DistributedDataParallel averaging the gradients. Each process's share runs in `train.accum_steps` micro-batches
(`hypvl.train.accumulation`: the same loss and gradients, one micro-batch's activations in memory). Every
`train.checkpoint_every` steps, and when a signal asks it to stop (`hypvl.train.stopping`), the run writes
`resume.pt` (`hypvl.train.resume`) and a restarted run continues from it. The main process reports every step as it
goes (`hypvl.train.telemetry`: train_log.csv, TensorBoard, W&B, progress), writes checkpoint.pt and
train_summary.json at the end (the last log row; PoinCLIP's apex rate and radius agreement averaged over the steps
too), and then removes resume.pt.
"""

import math
import signal
import time
from pathlib import Path

import torch

from hypvl.runtime.devices import select_device
from hypvl.errors import InputError, Stopped
from hypvl.io import write_json
from hypvl.runtime.loader_processes import worker_deaths
from hypvl.methods import METHODS
from hypvl.models.build import build_model
from hypvl.models.checkpoints import load_state, read_checkpoint, save_checkpoint

from . import distributed
from .data import ReaderState, TrainingStream
from .optim import build_optimizer, build_scheduler
from .recipe import check_recipe, recorded_train_section, resolve_schedule, stream_settings, train_section_for
from .resume import RESUME, fingerprint, load_resume, run_recipe, save_resume, set_rng_states
from .step import TrainStep, compile_encoders, precision_on
from .stopping import StopSignals
from .telemetry import Telemetry, check_telemetry

APEX_TERMS = ("apex_rate", "apex_radius_agreement")  # PoinCLIP's pair order (`hypvl.losses.poinclip`)
TERMS = ("loss", "contrastive", "entailment", "syntax", *APEX_TERMS)


def init_encoders(model, checkpoint: Path, freeze: bool) -> None:
    """Copy the image and text encoders of `checkpoint` into `model` (projections and learned scalars
    stay freshly initialised, as MERU Table 3 does); `freeze` stops their gradients."""
    state = read_checkpoint(checkpoint)["model"]
    encoders = {k: v for k, v in state.items() if k.startswith(("visual.", "textual."))}
    own = {k: v for k, v in model.state_dict().items() if not k.startswith(("visual.", "textual."))}
    load_state(model, {**own, **encoders}, str(checkpoint))
    for param in (*model.visual.parameters(), *model.textual.parameters()):
        param.requires_grad_(param.requires_grad and not freeze)


def train(experiment: dict, model_cfg: dict, train_cfg: dict, shards: list[Path], out_dir: Path,
          progress: bool = True, init_checkpoint: Path | None = None, build=None) -> dict:
    """Train `experiment` ({id, method, backbone, data, boxes, seed, overrides}) and write into `out_dir`:
    checkpoint.pt, train_log.csv, train_summary.json and what `train.telemetry` asks. Returns the summary. An
    experiment with `init_from` starts from the encoders of `init_checkpoint` (frozen with `freeze_encoders`).
    `build`, when given, makes the model instead (after seeding): a smoke stand-in of a library's architecture
    (`hypvl.outside.standins`), whose checkpoint recipe is its own. Under torchrun every process calls it."""
    check_recipe(experiment)
    check_telemetry(train_cfg["telemetry"])
    if METHODS[experiment["method"]].aligns:  # check_recipe: a registered method
        raise InputError(f"experiment {experiment['id']!r} aligns another experiment's model "
                         f"({experiment['method']}): run `hypvl finetune`")
    ranks = distributed.from_environment()
    device = distributed.start(ranks, select_device(train_cfg["device"]))
    try:
        return _train(experiment, model_cfg, train_cfg, shards, Path(out_dir), ranks, device, progress,
                      init_checkpoint, build)
    finally:
        distributed.stop(ranks)


def _train(experiment: dict, model_cfg: dict, train_cfg: dict, shards: list[Path], out_dir: Path,
           ranks: distributed.Ranks, device: torch.device, progress: bool, init_checkpoint: Path | None,
           build) -> dict:
    precision = precision_on(train_cfg["precision"], device)
    seed = experiment.get("seed", 0)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(device.type == "cpu")
    overrides = experiment.get("overrides") or {}
    schedule = resolve_schedule(overrides, train_section_for(experiment["id"], train_cfg))
    accum = train_cfg["accum_steps"]
    if schedule.batch_size % (ranks.world * accum):
        raise InputError(f"experiment {experiment['id']!r}: batch size {schedule.batch_size} does not split over "
                         f"{ranks.world} process(es) in {accum} micro-batch(es) each (train.accum_steps)")
    try:
        model = build() if build else build_model(experiment["method"], experiment["backbone"], model_cfg, overrides)
    except (TypeError, ValueError) as exc:  # an override value the model rejects
        raise InputError(f"experiment {experiment['id']!r}: {exc}") from exc
    if "init_from" in overrides:
        if init_checkpoint is None:
            raise InputError(f"experiment {experiment['id']!r} starts from {overrides['init_from']!r}: "
                             "give that experiment's checkpoint")
        init_encoders(model, init_checkpoint, overrides.get("freeze_encoders", False))
    if experiment["backbone"] in train_cfg["activation_checkpointing"]:
        model.set_grad_checkpointing(True)
    model = model.to(device)
    if train_cfg["compile"]:
        compile_encoders(model)
    optimizer = build_optimizer(model, schedule.lr, train_cfg["weight_decay"], train_cfg["betas"],
                                overrides.get("no_weight_decay", "scalars"))
    scheduler = build_scheduler(optimizer, schedule.warmup, schedule.schedule_steps)
    # float16 gradients where the loss is scaled into float16's range (MERU's and HyCoCLIP's `amp and
    # ddp_fp16_compression`); unscaled bf16 or fp32 gradients would underflow
    compressed = train_cfg["ddp_fp16_compression"] and precision.scaled and ranks.world > 1
    step_of = TrainStep(model, optimizer, scheduler, precision, device, train_cfg["accum_steps"],
                        lambda module: distributed.data_parallel(module, ranks, device, compressed),
                        train_cfg["attention"])
    reading = stream_settings(experiment)
    run = Run(run_recipe(experiment, model_cfg, train_cfg, shards),
              {"world": ranks.world, "workers": train_cfg["num_workers"]})
    resumed = load_resume(out_dir / RESUME, run.recipe, run.layout, ranks)
    if resumed is not None:
        run.restore(resumed, model, optimizer, scheduler, step_of.scaler, ranks)
    stream = TrainingStream(shards, model.tokenizer, model.image_size, schedule.batch_size // ranks.world, seed=seed,
                            shuffle_buffer=train_cfg["shuffle_buffer"],
                            max_corrupt_fraction=train_cfg["max_corrupt_fraction"], cache=train_cfg["cache_decoded"],
                            rank=ranks.rank, world=ranks.world, workers=train_cfg["num_workers"], states=run.streams,
                            rotation=run.step, **reading)
    model.train()
    every = train_cfg["checkpoint_every"]
    telemetry = Telemetry(out_dir, train_cfg["telemetry"], experiment["id"], schedule.steps, schedule.batch_size,
                          device, start=run.step, rows=run.rows, before=run.before, progress=progress,
                          config={**run.recipe, "schedule": schedule.__dict__}, main=ranks.main)
    batches = stream.loader(device.type == "cuda", ranks.local_world)
    with telemetry, worker_deaths("train.num_workers"), StopSignals() as signals:
        for step, batch in zip(range(run.step, schedule.steps), telemetry.timed(batches)):
            if "error" in batch:
                raise InputError(batch["error"])
            reader, state = batch.pop("stream")
            run.streams[reader] = state
            lr = scheduler.get_last_lr()[0]
            terms, stop = _averaged_terms(step_of(batch), ranks, signals.requested)
            run.rows.append(_log_row(step, terms, lr, model))
            telemetry.record(run.rows[-1])
            if not math.isfinite(run.rows[-1]["loss"]):
                raise InputError(f"experiment {experiment['id']!r}: the loss is {run.rows[-1]['loss']} at step "
                                 f"{step} (learning rate {lr:g}): training diverged; no checkpoint written")
            run.step = step + 1
            if run.step < schedule.steps and (stop or every and run.step % every == 0):
                run.save(out_dir / RESUME, model, optimizer, scheduler, step_of.scaler, ranks)
                if stop:
                    how = signal.Signals(signals.requested).name if signals.requested else "another process's signal"
                    raise Stopped(f"experiment {experiment['id']!r}: stopped by {how} after step {run.step} of "
                                  f"{schedule.steps}; {out_dir / RESUME} holds the run: the same command continues it",
                                  128 + (signals.requested or signal.SIGTERM))
    model.clamp_scalars()
    counts = [ReaderState(**state) for states in distributed.gather_objects(ranks, run.streams)
              for state in states.values()]
    if not ranks.main:
        return {}
    recipe = {**model.recipe(), "experiment": experiment["id"]} if build else {
        "method": experiment["method"], "backbone": experiment["backbone"], "overrides": overrides,
        "model_cfg": model_cfg, "experiment": experiment["id"], "data": experiment.get("data")}
    # what every model of a run shares (of train.steps_for, the entries matching this experiment), and its seed
    recipe.update(train_cfg=recorded_train_section(experiment["id"], train_cfg), seed=experiment.get("seed", 0))
    save_checkpoint(out_dir / "checkpoint.pt", model, recipe, schedule.steps)
    summary = {"experiment": experiment["id"], "schedule": schedule.__dict__, "final": run.rows[-1],
               "mean_over_steps": _step_means(run.rows, APEX_TERMS),
               "processes": ranks.world, "resumed_at_step": resumed["step"] if resumed is not None else None,
               "samples_read": sum(c.read for c in counts), "corrupt_images_skipped": sum(c.corrupt for c in counts),
               "corrupt_examples": [m for c in counts for m in c.corrupt_examples][:10],
               "samples_without_box": sum(c.no_box for c in counts), "data": _data_seen(stream.mode, counts),
               "precision": precision.name, "ddp_fp16_compression": compressed, "compile": train_cfg["compile"],
               "attention": train_cfg["attention"], "accum_steps": accum, "seconds": round(run.seconds(), 2)}
    write_json(out_dir / "train_summary.json", summary, indent=1)
    (out_dir / RESUME).unlink(missing_ok=True)
    return summary


class Run:
    """What a run has done so far: steps, log rows, stream states (reader -> ReaderState dict of this rank),
    seconds; saved in and restored from resume checkpoints."""

    def __init__(self, recipe: dict, layout: dict):
        self.recipe, self.digest, self.layout = recipe, fingerprint(recipe), layout
        self.step, self.rows, self.streams = 0, [], {}
        self.started, self.before = time.perf_counter(), 0.0

    def seconds(self) -> float:
        return self.before + time.perf_counter() - self.started

    def save(self, path: Path, model, optimizer, scheduler, scaler, ranks: distributed.Ranks) -> None:
        """Every rank's stream states to the main process, which writes the resume checkpoint."""
        streams = distributed.gather_objects(ranks, self.streams)
        if ranks.main:
            save_resume(path, {"recipe": self.recipe, "fingerprint": self.digest, "layout": self.layout,
                               "step": self.step, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                               "scheduler": scheduler.state_dict(), "scaler": scaler.state_dict(),
                               "streams": streams, "rows": self.rows, "seconds": self.seconds()})

    def restore(self, state: dict, model, optimizer, scheduler, scaler, ranks: distributed.Ranks) -> None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        scaler.load_state_dict(state["scaler"])
        set_rng_states(state["rng"])
        self.step, self.rows, self.streams = state["step"], state["rows"], state["streams"][ranks.rank]
        self.before = state["seconds"]


def _data_seen(mode: str, counts: list[ReaderState]) -> dict:
    """What the run trained on: its stream mode; the image-caption pairs and boxes of one pass over the corpus as the
    mode reads it (every pair for `pairs` and `boxes_as_pairs`, those with a box for `compositional`; the boxes it
    draws from), whole once every reader has finished its first epoch; and the pairs and boxes of every step."""
    return {"mode": mode, "corpus_pairs": sum(c.corpus_pairs for c in counts),
            "corpus_boxes": sum(c.corpus_boxes for c in counts), "first_epoch_complete": all(c.epoch for c in counts),
            "pairs_seen": sum(c.pairs_seen for c in counts), "boxes_seen": sum(c.boxes_seen for c in counts)}


def _averaged_terms(terms: dict, ranks: distributed.Ranks, stop: int | None) -> tuple[dict, bool]:
    """The batch's loss terms averaged over the ranks (the global batch's terms), and whether any rank was asked to
    stop (`stop`: the signal this one received, else None), in the same all-reduce: every rank stops at one step."""
    names = [name for name in TERMS if name in terms]
    stacked = torch.stack([terms[name].detach().float() for name in names])
    values = distributed.average(ranks, torch.cat([stacked, stacked.new_full((1,), float(stop is not None))]))
    return dict(zip(names, values[:-1])), bool(values[-1] > 0)


def _step_means(rows: list[dict], names: tuple[str, ...]) -> dict:
    """Each of `names` that the log rows hold, averaged over the steps (none: a model without them)."""
    values = {name: [row[name] for row in rows if name in row] for name in names}
    return {name: sum(seen) / len(seen) for name, seen in values.items() if seen}


def _log_row(step: int, terms: dict, lr: float, model) -> dict:
    """One log row: the step's loss terms, the learning rate it trained with, the scalars after it."""
    with torch.no_grad():
        curvature = model.curvature.item() if hasattr(model, "curvature") else None  # CLIP: none (empty, null)
        return {"step": step, **{name: value.item() for name, value in terms.items()},
                "lr": lr, "curvature": curvature, "temperature": (-model.logit_scale).exp().item()}
