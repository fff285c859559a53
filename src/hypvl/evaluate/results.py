"""One metrics JSON per (experiment, task), written atomically, with provenance."""

from pathlib import Path

from hypvl.errors import InputError
from hypvl.io import write_json
from hypvl.provenance import provenance
from hypvl.tasks import metric_problem


def write_metrics(path: Path, experiment: str, task: str, scale: str, metrics: dict[str, float],
                  n_samples: int, config_hash: str, seconds: float, inputs: dict | None = None) -> None:
    """Write the metrics JSON, its provenance recording `inputs` (run config and hash, data manifest and checkpoint
    sha256); a metric the task does not declare, or a value that is not finite or lies outside its kind's range (a
    fraction where a percentage belongs), is an error, never a number on disk."""
    problems = [problem for name, value in metrics.items()
                if (problem := metric_problem(task, name, value, scale)) is not None]
    if problems:
        raise InputError(f"{experiment}/{task}: {'; '.join(problems)}; nothing written to {path}")
    record = {"experiment": experiment, "task": task, "scale": scale,
              "metrics": {name: round(float(value), 6) for name, value in metrics.items()},
              "n_samples": n_samples, "provenance": provenance(config_hash, round(seconds, 3), **(inputs or {}))}
    write_json(path, record, indent=1)
