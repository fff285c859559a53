"""One metrics JSON per (experiment, task), written atomically, with provenance."""

import json
import math
from pathlib import Path

from hypvl.io import atomic_write
from hypvl.provenance import provenance


def write_metrics(path: Path, experiment: str, task: str, scale: str, metrics: dict[str, float],
                  n_samples: int, config_hash: str, seconds: float) -> None:
    """Write the metrics JSON; a non-finite metric is an error, never a number on disk."""
    bad = [name for name, value in metrics.items() if not math.isfinite(value)]
    if bad:
        raise ValueError(f"{experiment}/{task}: non-finite metric(s) {bad}; nothing written to {path}")
    record = {"experiment": experiment, "task": task, "scale": scale,
              "metrics": {name: round(float(value), 6) for name, value in metrics.items()},
              "n_samples": n_samples, "provenance": provenance(config_hash, round(seconds, 3))}
    with atomic_write(path) as handle:
        json.dump(record, handle, indent=1)
