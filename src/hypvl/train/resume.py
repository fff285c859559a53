"""Periodic training checkpoints: everything a killed run needs to continue exactly where it was.

`resume.pt` in the run's output folder holds the model, optimiser, gradient scaler and schedule states, the RNG
states, every reader's stream position (`hypvl.train.data.ReaderState`), the log so far and the recipe's
fingerprint. It is written atomically every `train.checkpoint_every` steps, so a run killed at any moment finds
the last complete one; a run of the same recipe finds it in its `--out` folder and continues from it (on the CPU,
bitwise as if it had not stopped). One of another recipe is ignored; the data-parallel layout (processes, loader
workers) must be the one that wrote it.
"""

import hashlib
import json
import logging
import random
from pathlib import Path

import torch

from hypvl.errors import InputError
from hypvl.io import atomic_write
from hypvl.models.checkpoints import read_checkpoint

RESUME = "resume.pt"
# train settings that change no number of the run (how it is checkpointed, where the decoded corpus is kept) or its
# numbers by float rounding only (micro-batches: the same loss and gradients), or that the layout check covers
# (loader workers)
NEUTRAL_SETTINGS = ("checkpoint_every", "cache_decoded", "accum_steps", "num_workers")

log = logging.getLogger(__name__)


def fingerprint(experiment: dict, model_cfg: dict, train_cfg: dict, shards: list[Path]) -> str:
    """A digest of what determines a run's numbers: experiment, model and train settings, the shards' names."""
    settings = {key: value for key, value in train_cfg.items() if key not in NEUTRAL_SETTINGS}
    blob = json.dumps([experiment, model_cfg, settings, [Path(s).name for s in shards]], sort_keys=True, default=str)
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
    """Write a resume checkpoint (`state`: fingerprint, layout, step, model, optimizer, scheduler, scaler, streams,
    rows, seconds) atomically, with the RNG states."""
    with atomic_write(path, "wb") as handle:
        torch.save({**state, "rng": rng_states()}, handle)


def load_resume(path: Path, digest: str, layout: dict) -> dict | None:
    """The resume checkpoint at `path` when there is one of this recipe (else None, logged); a layout other than
    `layout` is an InputError: its stream positions belong to other readers."""
    if not Path(path).is_file():
        return None
    state = read_checkpoint(path, ("fingerprint", "layout", "step", "model", "optimizer", "scheduler", "scaler",
                                   "streams", "rows", "seconds", "rng"))
    if state["fingerprint"] != digest:
        log.info("%s: written by another recipe or data; training from step 0", path)
        return None
    if state["layout"] != layout:
        raise InputError(f"{path}: written by {state['layout']['world']} process(es) with "
                         f"{state['layout']['workers']} loader worker(s) each; this run has {layout['world']} with "
                         f"{layout['workers']}: resume with that layout, or delete the file to start over")
    return state
