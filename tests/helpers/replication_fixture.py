"""The replication fixture (tests/data/replication: a tiny spec and its printed table), the numbers the paper prints
in it, made-up measurements of ours written as metric JSONs, and helpers to edit the spec."""

import json
from pathlib import Path

import yaml

from helpers import REPO

FIXTURE = REPO / "tests" / "data" / "replication"  # copied into tmp_path by the `workspace` fixture (conftest)

# The fixture's printed numbers, read by hand from tests/data/replication/expected/tiny/table1.csv.
PAPER = {
    ("clip", "acc_a"): 50.0, ("clip", "acc_b"): 30.5, ("clip", "tau"): 0.84, ("clip", "avg"): 40.2,
    ("meru", "acc_a"): 31.2, ("meru", "acc_b"): None, ("meru", "tau"): 0.79, ("meru", "avg"): None,
    ("regionclip", "acc_a"): 40.1, ("regionclip", "acc_b"): 20.0, ("regionclip", "tau"): None,
    ("regionclip", "avg"): 30.1,
}
PRINTED = {
    ("clip", "acc_a"): "50.0", ("clip", "acc_b"): "30.5", ("clip", "tau"): "0.84", ("clip", "avg"): "40.2",
    ("meru", "acc_a"): "31.2", ("meru", "acc_b"): "-", ("meru", "tau"): "0.79", ("meru", "avg"): "dnc",
    ("regionclip", "acc_a"): "40.1", ("regionclip", "acc_b"): "20.0", ("regionclip", "tau"): "n/a",
    ("regionclip", "avg"): "30.1",
}
# Our (made-up) measurements: experiment -> task -> metric -> value.
OURS = {
    "tiny_clip": {"zs_cifar10": {"top1": 51.0}, "zs_cifar100": {"top1": 29.49}, "hierarcaps": {"kendall_tau": 0.86}},
    "tiny_meru": {"zs_cifar10": {"top1": 32.2}, "zs_cifar100": {"top1": 12.5}, "hierarcaps": {"kendall_tau": 0.76}},
}
HASHES = {"tiny_clip": "aaaaaaaaaaaa", "tiny_meru": "bbbbbbbbbbbb"}


def write_metrics(root: Path, scale: str, skip=()) -> Path:
    """Write OURS as metric JSONs under root/results/<scale>/metrics, leaving out (experiment, task) in skip."""
    metrics_dir = root / "results" / scale / "metrics"
    for experiment, tasks in OURS.items():
        for task, metrics in tasks.items():
            if (experiment, task) in skip:
                continue
            path = metrics_dir / experiment / f"{task}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            record = {
                "experiment": experiment, "task": task, "scale": scale, "metrics": metrics, "n_samples": 10,
                "provenance": {"config_hash": HASHES[experiment], "git_commit": "c0ffee", "date":
                               "2026-11-22T00:04:00+00:00", "packages": {}, "seconds": 1.0},
            }
            path.write_text(json.dumps(record))
    return metrics_dir


def edit_spec(root: Path, change) -> Path:
    """Apply change(document) to the fixture spec in root and write it back; return its path."""
    path = root / "replication" / "tiny.yaml"
    document = yaml.safe_load(path.read_text())
    change(document)
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def our_value(experiment: str, row: str, column: str) -> float:
    """Our number for a cell, computed from OURS by hand (avg = mean of zs_cifar10 and zs_cifar100)."""
    tasks = {"acc_a": ["zs_cifar10"], "acc_b": ["zs_cifar100"], "tau": ["hierarcaps"], "avg": ["zs_cifar10", "zs_cifar100"]}[column]
    metric = "kendall_tau" if column == "tau" else "top1"
    return sum(OURS[experiment][task][metric] for task in tasks) / len(tasks)


# A run config that metric JSONs may be stamped with (`stamp`), as the evaluation records one.
RUN_CONFIG = {"scale": "full", "model": {"embed_dim": 512}, "train": {"steps": 500, "lr": 5e-4}, "eval": {}}


def stamp(metrics_dir: Path, **fields) -> None:
    """Add `fields` to the provenance of every metric JSON under metrics_dir."""
    for path in metrics_dir.glob("*/*.json"):
        record = json.loads(path.read_text())
        record["provenance"].update(fields)
        path.write_text(json.dumps(record))
