"""Periodic training checkpoints: everything a killed run needs to continue exactly where it was.

`resume.pt` in the run's output folder holds the model, optimiser, gradient scaler and schedule states, the RNG
states, every reader's stream position (`hypvl.train.data.ReaderState`), the log so far and the recipe with its
fingerprint. It is written atomically every `train.checkpoint_every` steps, so a run killed at any moment finds
the last complete one; a run of the same recipe finds it in its `--out` folder and continues from it (on the CPU,
bitwise as if it had not stopped). One of another recipe is kept aside (renamed `resume.<its fingerprint>.pt`, with
a warning naming both recipes and how they differ) and the run starts over; the data-parallel layout (processes,
loader workers) must be the one that wrote it.
"""

import hashlib
import json
import logging
import os
import random
import re
from pathlib import Path

import torch

from hypvl.config import RUN_SETTINGS
from hypvl.errors import InputError
from hypvl.io import atomic_write
from hypvl.models.checkpoints import read_checkpoint
from hypvl.provenance import config_differences

from . import distributed
from .data import STREAM_ORDER
from .recipe import stream_settings

RESUME = "resume.pt"
# train settings that change no number of the run (hypvl.config.RUN_SETTINGS: checkpoints, the decoded corpus kept,
# telemetry) or its numbers by float rounding only (micro-batches: the same loss and gradients; the encoders compiled;
# another attention kernel), or that the layout check covers (loader workers): a run resumes across them
NEUTRAL_SETTINGS = (*RUN_SETTINGS, "accum_steps", "compile", "attention", "num_workers")
STATE_KEYS = ("fingerprint", "layout", "step", "model", "optimizer", "scheduler", "scaler", "streams", "rows",
              "seconds", "rng")

log = logging.getLogger(__name__)


def run_recipe(experiment: dict, model_cfg: dict, train_cfg: dict, shards: list[Path]) -> dict:
    """What determines a run's numbers, as JSON values: the experiment, the model and train settings (less the
    NEUTRAL_SETTINGS), the shards' names and how the stream reads them (its settings and order)."""
    settings = {key: value for key, value in train_cfg.items() if key not in NEUTRAL_SETTINGS}
    recipe = {"experiment": experiment, "model": model_cfg, "train": settings, "shards": [Path(s).name for s in shards],
              "stream": {**stream_settings(experiment), "order": STREAM_ORDER}}
    return json.loads(json.dumps(recipe, default=str))


def fingerprint(recipe: dict) -> str:
    """A digest of a `run_recipe`."""
    blob = json.dumps([recipe["experiment"], recipe["model"], recipe["train"], recipe["shards"], recipe["stream"]],
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def rng_states() -> dict:
    return {"torch": torch.get_rng_state(), "python": random.getstate(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []}


def set_rng_states(states: dict) -> None:
    torch.set_rng_state(states["torch"])
    random.setstate(states["python"])
    if states["cuda"]:
        torch.cuda.set_rng_state_all(states["cuda"])


def save_resume(path: Path, state: dict) -> None:
    """Write a resume checkpoint (`state`: recipe, fingerprint, layout, step, model, optimizer, scheduler, scaler,
    streams, rows, seconds) atomically, with the RNG states."""
    with atomic_write(path, "wb") as handle:
        torch.save({**state, "rng": rng_states()}, handle)


def load_resume(path: Path, recipe: dict, layout: dict, ranks: distributed.Ranks) -> dict | None:
    """The resume checkpoint at `path` when there is one of `recipe` (else None). One of another recipe is kept aside
    by the main process once every process has read it (`keep_aside`); a layout other than `layout` is an
    InputError: its stream positions belong to other readers. Every rank calls it."""
    path = Path(path)
    state = read_checkpoint(path, STATE_KEYS) if path.is_file() else None
    distributed.barrier(ranks)  # every process has read the file before the main one moves it
    if state is None:
        return None
    if state["fingerprint"] != fingerprint(recipe):
        if ranks.main:
            keep_aside(path, state, recipe)
        return None
    if state["layout"] != layout:
        raise InputError(f"{path}: written by {state['layout']['world']} process(es) with "
                         f"{state['layout']['workers']} loader worker(s) each; this run has {layout['world']} with "
                         f"{layout['workers']}: resume with that layout, or delete the file to start over")
    return state


def keep_aside(path: Path, state: dict, recipe: dict) -> Path:
    """Rename the resume checkpoint `state` of another recipe than `recipe`, at `path`, to `resume.<its fingerprint>.pt`
    beside it (`-2`, `-3`... where that name is taken: nothing is overwritten), with a warning naming both recipes
    and the settings that differ. Returns the new path."""
    theirs = re.sub(r"\W", "", str(state["fingerprint"]))[:12] or "unknown"
    target, n = path.with_name(f"resume.{theirs}.pt"), 1
    while target.exists():
        n += 1
        target = path.with_name(f"resume.{theirs}-{n}.pt")
    os.replace(path, target)
    recorded = state.get("recipe")
    differ = config_differences(recorded, recipe) if isinstance(recorded, dict) else []
    how = (f"; they differ in {'; '.join(differ[:5])}{'; ...' if len(differ) > 5 else ''}" if differ else
           "" if isinstance(recorded, dict) else "; its settings are not recorded (an older hypvl wrote it)")
    log.warning("%s: a resume checkpoint of another recipe (%s, step %s) than this run's (%s)%s; kept aside as %s, "
                "training from step 0", path, _named(recorded, state["fingerprint"]), state["step"],
                _named(recipe, fingerprint(recipe)), how, target.name)
    return target


def _named(recipe, digest: str) -> str:
    """A recipe as a warning names it: its experiment and fingerprint."""
    experiment = recipe.get("experiment") if isinstance(recipe, dict) else None
    name = f"experiment {experiment.get('id')!r}, " if isinstance(experiment, dict) else ""
    return f"{name}fingerprint {str(digest)[:12]}"
