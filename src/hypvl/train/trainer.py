"""Train one experiment: seeded, bitwise reproducible on CPU, with a loss log and a final checkpoint."""

import csv
import json
import time
from pathlib import Path

import torch
from tqdm import tqdm

from hypvl.devices import select_device
from hypvl.errors import InputError
from hypvl.io import atomic_write
from hypvl.models.build import build_model
from hypvl.models.checkpoints import load_state, read_checkpoint, save_checkpoint
from hypvl.models.encoders import Tokenizer
from hypvl.models.methods import PARSE_METHODS

from .data import TrainingStream
from .optim import build_optimizer, build_scheduler
from .recipe import check_recipe, resolve_schedule, stream_mode

LOG_FIELDS = ("step", "loss", "contrastive", "entailment", "syntax", "lr", "curvature", "temperature")


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
          progress: bool = True, init_checkpoint: Path | None = None) -> dict:
    """Train `experiment` ({id, method, backbone, boxes, seed, overrides}) and write into `out_dir`:
    checkpoint.pt, train_log.csv and train_summary.json. Returns the summary. An experiment with
    `init_from` starts from the encoders of `init_checkpoint` (frozen with `freeze_encoders`)."""
    check_recipe(experiment)
    out_dir = Path(out_dir)
    device = select_device(train_cfg["device"])
    amp = train_cfg["amp"] and device.type == "cuda"
    torch.manual_seed(experiment.get("seed", 0))
    torch.use_deterministic_algorithms(device.type == "cpu")
    overrides = experiment.get("overrides") or {}
    schedule = resolve_schedule(overrides, train_cfg)
    try:
        model = build_model(experiment["method"], experiment["backbone"], model_cfg, overrides)
    except (TypeError, ValueError) as exc:  # an override value the model rejects
        raise InputError(f"experiment {experiment['id']!r}: {exc}") from exc
    if "init_from" in overrides:
        if init_checkpoint is None:
            raise InputError(f"experiment {experiment['id']!r} starts from {overrides['init_from']!r}: "
                             "give that experiment's checkpoint")
        init_encoders(model, init_checkpoint, overrides.get("freeze_encoders", False))
    model = model.to(device)
    optimizer = build_optimizer(model, schedule.lr, train_cfg["weight_decay"], train_cfg["betas"])
    scheduler = build_scheduler(optimizer, schedule.warmup, schedule.steps)
    stream = TrainingStream(shards, Tokenizer(model_cfg["text"]["context_length"]), model_cfg["image_size"],
                            schedule.batch_size, stream_mode(experiment["method"], experiment.get("boxes", False)),
                            seed=experiment.get("seed", 0), shuffle_buffer=train_cfg["shuffle_buffer"],
                            max_corrupt_fraction=train_cfg["max_corrupt_fraction"], cache=train_cfg["cache_decoded"],
                            syntax=experiment["method"] in PARSE_METHODS)
    start = time.perf_counter()
    rows = []
    model.train()
    bar = tqdm(total=schedule.steps, desc=experiment["id"], disable=not progress, mininterval=2.0)
    scaler = torch.amp.GradScaler(device.type, enabled=amp)
    for step, batch in enumerate(stream.batches(schedule.steps)):
        model.clamp_scalars()
        with torch.autocast(device.type, dtype=torch.float16, enabled=amp):  # geometry stays float32 inside
            terms = model.loss({key: value.to(device, non_blocking=True) for key, value in batch.items()})
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(terms["loss"]).backward()
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        rows.append(_log_row(step, terms, scheduler.get_last_lr()[0], model))
        bar.update()
        bar.set_postfix(loss=f"{rows[-1]['loss']:.3f}", refresh=False)
    bar.close()
    model.clamp_scalars()
    recipe = {"method": experiment["method"], "backbone": experiment["backbone"], "overrides": overrides,
              "model_cfg": model_cfg, "train_cfg": train_cfg, "seed": experiment.get("seed", 0),
              "experiment": experiment["id"]}
    save_checkpoint(out_dir / "checkpoint.pt", model, recipe, schedule.steps)
    with atomic_write(out_dir / "train_log.csv") as handle:
        writer = csv.DictWriter(handle, LOG_FIELDS, restval="")  # empty: a term the method does not have
        writer.writeheader()
        writer.writerows(rows)
    summary = {"experiment": experiment["id"], "schedule": schedule.__dict__, "final": rows[-1],
               "samples_read": stream.counts.read, "corrupt_images_skipped": stream.counts.corrupt,
               "corrupt_examples": stream.counts.corrupt_examples, "samples_without_box": stream.counts.no_box,
               "seconds": round(time.perf_counter() - start, 2)}
    with atomic_write(out_dir / "train_summary.json") as handle:
        json.dump(summary, handle, indent=1)
    return summary


def _log_row(step: int, terms: dict, lr: float, model) -> dict:
    with torch.no_grad():
        curvature = model.curvature.item() if hasattr(model, "curvature") else float("nan")
        return {"step": step, "loss": terms["loss"].item(), "contrastive": terms["contrastive"].item(),
                **{term: terms[term].item() for term in ("entailment", "syntax") if term in terms},
                "lr": lr, "curvature": curvature, "temperature": (-model.logit_scale).exp().item()}
