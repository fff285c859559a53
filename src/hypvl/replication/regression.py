"""Regression of measured numbers against a pinned baseline (`baselines/<scale>.csv`).

Every metric of every metrics JSON under `results/<scale>/metrics` is one value (experiment, task,
metric), its sample count another (metric `n_samples`, which must match exactly), and for the groups
whose policy gives `mean_atol`, the mean of each metric over the group's tasks that report it (two or
more) a third (task `mean:<group>`, e.g. an experiment's mean zero-shot accuracy over the 20 sets). Single values move a
little across CPUs, a real change (a loss term, a prompt, a split) moves whole groups, so the means are
pinned more tightly than single values. The policy (`baselines/tolerances.yaml`) gives every task group
of the suite (`hypvl.tasks.GROUP_MODULES`, and no other name) an `atol`, optionally an `rtol`
(allowed = atol + rtol * |baseline|), per-metric `metrics` overrides and `mean_atol`; metrics listed
under `ignore` (search diagnostics such as the probe's chosen C) are not pinned.

Status of each value: `ok`, `drift` (outside its tolerance), `unpinned` (measured, not in the baseline)
or `missing` (pinned, not measured; a failure only when the whole baseline is checked). The seed variants of
experiments (`<id>__seed<N>`, config `seeds`) are not pinned: their spread is what the tolerances must cover.
"""

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from hypvl.errors import NUMBER_LIMIT, InputError
from hypvl.io import atomic_write
from hypvl.replication.compare import metric_value, read_metrics_record
from hypvl.replication.markdown import code, escape
from hypvl.replication.markdown import table as markdown_table
from hypvl.spec.paper import SEED_MARK
from hypvl.tasks import GROUP_MODULES, task_group
from hypvl.yaml_text import safe_load

KEY = ["experiment", "task", "metric"]
SAMPLE_COUNT = "n_samples"
MEAN_PREFIX = "mean:"
STATUSES = ("drift", "unpinned", "missing", "ok")
PROVENANCE = ("git_commit", "git_dirty", "run_config_hash", "data_manifest_hash")  # of each measured value's JSON


@dataclass(frozen=True)
class GroupPolicy:
    atol: float
    rtol: float = 0.0
    metrics: dict | None = None
    mean_atol: float | None = None

    def allowed(self, metric: str, baseline: float) -> float:
        if metric == SAMPLE_COUNT:
            return 0.0
        atol = (self.metrics or {}).get(metric, self.atol)
        return atol + self.rtol * abs(baseline)


@dataclass(frozen=True)
class Policy:
    """A tolerance per task group of the suite (every group of `GROUP_MODULES`, no other), and the metrics not pinned."""

    groups: dict[str, GroupPolicy]
    ignore: frozenset[str]


def load_policy(path) -> Policy:
    """Read `tolerances.yaml`; InputError names the file and the bad entry, a group the suite does not have
    or a task group of the suite (`hypvl.tasks.GROUP_MODULES`) without a tolerance."""
    path = Path(path)
    try:
        raw = safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise InputError(f"{path}: cannot read the tolerance policy: {error}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("groups"), dict):
        raise InputError(f"{path}: expected a mapping with a 'groups' mapping")
    groups = {}
    for name, entry in raw["groups"].items():
        try:
            groups[name] = GroupPolicy(**entry)
        except TypeError as error:
            raise InputError(f"{path}: group {name!r}: {error}") from None
    unknown = [name for name in groups if name not in GROUP_MODULES]
    if unknown:
        raise InputError(f"{path}: groups {unknown} are not task groups of the suite (those are: {', '.join(GROUP_MODULES)})")
    missing = [name for name in GROUP_MODULES if name not in groups]
    if missing:
        raise InputError(f"{path}: no tolerance for the task groups {missing}")
    return Policy(groups, frozenset(raw.get("ignore", ())))


def measured_values(metrics_dir, scale: str, policy: Policy) -> pd.DataFrame:
    """(experiment, task, metric, value) of every metrics JSON under `metrics_dir`, plus sample counts
    and group means; each JSON is checked against its folder (experiment) and file name (task)."""
    rows = []
    for path in sorted(Path(metrics_dir).glob("*/*.json")):
        experiment, task = path.parent.name, path.stem
        if SEED_MARK in experiment:
            continue
        record = read_metrics_record(path, experiment, task, scale)
        group = task_group(task, scale)
        if group is None:
            raise InputError(f"{path}: {task!r} is not a task of the suite at scale {scale!r}")
        provenance = tuple(str(record["provenance"].get(key, "")) for key in PROVENANCE)
        rows += [(experiment, task, group, metric, metric_value(path, record, metric), *provenance)
                 for metric in record["metrics"] if metric not in policy.ignore]
        rows.append((experiment, task, group, SAMPLE_COUNT, float(record["n_samples"]), *provenance))
    frame = pd.DataFrame(rows, columns=["experiment", "task", "group", "metric", "value", *PROVENANCE])
    means = []
    for group, entry in policy.groups.items():
        if entry.mean_atol is not None:
            values = frame[(frame["group"] == group) & (frame["metric"] != SAMPLE_COUNT)]
            stats = values.groupby(["experiment", "metric"], as_index=False)["value"].agg(["mean", "count"])
            shared = stats[stats["count"] >= 2]  # a metric of a single task has no mean to pin
            means.append(pd.DataFrame({"experiment": shared["experiment"], "task": MEAN_PREFIX + group,
                                       "group": group, "metric": shared["metric"], "value": shared["mean"]}))
    return pd.concat([frame, *means], ignore_index=True)[KEY + ["group", "value", *PROVENANCE]]


def read_baseline(path) -> pd.DataFrame:
    """The pinned values; InputError names the file when it is unreadable or its columns are wrong."""
    try:
        frame = pd.read_csv(path, dtype={"experiment": str, "task": str, "metric": str})
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise InputError(f"{path}: cannot read the baseline: {error}") from None
    if list(frame.columns) != KEY + ["value"]:
        raise InputError(f"{path}: columns are {list(frame.columns)}, expected {KEY + ['value']}")
    values = pd.to_numeric(frame["value"].astype(str), errors="coerce")  # a 400-digit number: inf
    if not (values.abs() <= NUMBER_LIMIT).all() or frame.duplicated(KEY).any():
        raise InputError(f"{path}: every (experiment, task, metric) needs exactly one numeric value, finite and "
                         f"within ±{NUMBER_LIMIT:g}")
    return frame


def check(measured: pd.DataFrame, baseline: pd.DataFrame, policy: Policy, scale: str, whole: bool) -> pd.DataFrame:
    """One line per value in either frame: baseline, measured, allowed difference and status.
    `whole`: every pinned value must have been measured (otherwise unmeasured ones are dropped)."""
    joined = measured.rename(columns={"value": "measured"}).merge(
        baseline.rename(columns={"value": "baseline"}), on=KEY, how="outer")
    if not whole:
        joined = joined[joined["measured"].notna()]
    group_of = joined["task"].map(lambda task: task.removeprefix(MEAN_PREFIX) if task.startswith(MEAN_PREFIX)
                                  else task_group(task, scale) or "")
    joined["group"] = joined["group"].fillna(group_of)

    def allowed(row) -> float:
        entry = policy.groups.get(row.group)
        if entry is None or pd.isna(row.baseline):
            return float("nan")
        if row.task.startswith(MEAN_PREFIX):
            return entry.mean_atol
        return entry.allowed(row.metric, row.baseline)

    joined["allowed"] = [allowed(row) for row in joined.itertuples()]
    joined["difference"] = joined["measured"] - joined["baseline"]
    joined["status"] = "ok"
    joined.loc[joined["difference"].abs() > joined["allowed"] + 1e-9, "status"] = "drift"
    joined.loc[joined["baseline"].isna(), "status"] = "unpinned"
    joined.loc[joined["measured"].isna(), "status"] = "missing"
    return joined.sort_values(KEY, ignore_index=True)


def failures(checked: pd.DataFrame) -> pd.DataFrame:
    return checked[checked["status"] != "ok"]


def update_baseline(path, measured: pd.DataFrame) -> pd.DataFrame:
    """Pin the measured values: replace every pinned (experiment, task) that was measured, keep the rest."""
    path = Path(path)
    fresh = measured[KEY + ["value"]]
    if path.exists():
        old = read_baseline(path)
        remeasured = old.set_index(["experiment", "task"]).index.isin(
            fresh.set_index(["experiment", "task"]).index)
        fresh = pd.concat([old[~remeasured], fresh], ignore_index=True)
    fresh = fresh.sort_values(KEY, ignore_index=True)
    with atomic_write(path) as handle:
        fresh.to_csv(handle, index=False, float_format="%.6f")
    return fresh


def render_report(checked: pd.DataFrame, scale: str, baseline_path, whole: bool) -> str:
    """Markdown: a verdict line, counts per status and group, and every value that is not ok."""
    bad = failures(checked)
    verdict = "PASS" if bad.empty else "FAIL"
    lines = [f"# Regression at scale {code(scale)}: {verdict}", "",
             f"Baseline {code(baseline_path)}; "
             f"{'every pinned value checked' if whole else 'measured values only'}.", "",
             _provenance_line(checked), ""]
    counts = checked.groupby(["group", "status"]).size().unstack(fill_value=0)
    lines += markdown_table(["group", *STATUSES],
                            [[group, *(str(int(row.get(s, 0))) for s in STATUSES)] for group, row in counts.iterrows()],
                            ["left"] + ["right"] * len(STATUSES))
    if not bad.empty:
        numbers = ["baseline", "measured", "difference", "allowed"]
        body = [[row.experiment, row.task, row.metric,  # a folder, a task and a metric the suite knows (checked)
                 *(_number(getattr(row, name)) for name in numbers), row.status] for row in bad.itertuples()]
        lines += [""] + markdown_table(["experiment", "task", "metric", *numbers, "status"], body,
                                       ["left"] * 3 + ["right"] * 4 + ["left"])
    return "\n".join(lines) + "\n"


def _provenance_line(checked: pd.DataFrame) -> str:
    """Where the measured values come from: git commits (and uncommitted changes), run configs, data manifests."""
    def distinct(key, digits=None):
        values = sorted({value for value in checked[key].dropna() if value})
        return ", ".join(code(value[:digits]) for value in values) or "–"

    dirty = sorted({escape({"True": "yes", "False": "no"}.get(value, value)) for value in checked["git_dirty"].dropna()
                    if value})
    return (f"Measured at git commit {distinct('git_commit')} (uncommitted changes: {', '.join(dirty) or '–'}), "
            f"run config {distinct('run_config_hash')}, data manifest (sha256) {distinct('data_manifest_hash', 12)}.")


def _number(value) -> str:
    return "" if pd.isna(value) else f"{value:.4g}"
