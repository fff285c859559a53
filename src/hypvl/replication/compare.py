"""Join a table's printed numbers with our metric JSONs: one line per printed cell with a verdict.

Verdicts, in order of precedence:
  external        the row or column is outside the suite (the spec says why)
  missing         a metric the cell needs is not measured; `reason` says why (hypvl.replication.coverage)
  no_paper_value  the paper prints no number there (`-`, `dnc`, `n/a`); ours is still shown
  not_comparable  measured at a scale other than `full` (smoke numbers do not estimate the paper's)
  within/outside  |ours - paper| <= tolerance, or not
"""

import json
from pathlib import Path

import pandas as pd

from hypvl.errors import InputError
from hypvl.expected import load_expected
from hypvl.io import atomic_write
from hypvl.replication.coverage import Blockers, missing_reason
from hypvl.spec import Column, Mean, PaperSpec, measures
from hypvl.tasks import metric_problem

VERDICTS = ("within", "outside", "not_comparable", "no_paper_value", "missing", "external")
FULL_SCALE = "full"
COLUMNS = (
    "row", "column", "experiment", "task", "metric", "tolerance", "paper", "paper_text",
    "ours", "delta", "verdict", "reason", "scale", "config_hash", "git_commit", "date",
)
_TEXT_COLUMNS = ("row", "column", "experiment", "task", "metric", "paper_text", "verdict", "reason", "scale",
                 "config_hash", "git_commit", "date")
_NUMBER_COLUMNS = ("tolerance", "paper", "ours", "delta")
_ROUNDING_SLACK = 1e-9  # |delta| == tolerance up to float error counts as within


def metrics_path(metrics_dir, experiment: str, task: str) -> Path:
    """Where the metrics JSON of (experiment, task) lives: `<metrics_dir>/<experiment>/<task>.json`."""
    return Path(metrics_dir) / experiment / f"{task}.json"


def read_metrics_record(path: Path, experiment: str, task: str, scale: str) -> dict:
    """The record of a metrics JSON, checked: InputError names the file when it is not JSON, belongs to
    another experiment, task or scale, or holds no metrics or no provenance."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise InputError(f"{path}:{error.lineno}: not valid JSON: {error.msg}") from None
    if not isinstance(record, dict):
        raise InputError(f"{path}: expected a JSON object")
    for key, wanted in (("experiment", experiment), ("task", task), ("scale", scale)):
        if record.get(key) != wanted:
            raise InputError(f"{path}: {key} is {record.get(key)!r}, expected {wanted!r}")
    metrics = record.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        raise InputError(f"{path}: no metrics")
    provenance = record.get("provenance")
    required = ("config_hash", "git_commit", "date")
    if not isinstance(provenance, dict) or any(key not in provenance for key in required):
        raise InputError(f"{path}: provenance must give config_hash, git_commit and date")
    return record


def metric_value(path: Path, record: dict, metric: str) -> float:
    """A metric of a checked record as a float; InputError names the file when the task does not declare
    the metric or its value is not a finite number within the range of the metric's kind."""
    value = record["metrics"][metric]
    problem = metric_problem(record["task"], metric, value, record["scale"])
    if problem is not None:
        raise InputError(f"{path}: {problem}")
    return float(value)


def read_metric(path: Path, experiment: str, task: str, metric: str, scale: str) -> tuple[float, dict] | None:
    """Read one metric from a metrics JSON; return (value, provenance), or None where the JSON has no
    such metric (the cell is then missing, e.g. a VL-CheckList group the smoke world does not write).
    Errors as `read_metrics_record`, or a non-finite value."""
    record = read_metrics_record(path, experiment, task, scale)
    if metric not in record["metrics"]:
        return None  # the task ran but could not compute this metric here (e.g. a group the data lacks)
    return metric_value(path, record, metric), record["provenance"]


def joined(values) -> str:
    """Distinct values, sorted, joined by ';' (one cell may rest on several JSONs)."""
    return ";".join(sorted({str(value) for value in values}))


def split_joined(fields) -> list[str]:
    """The distinct values, sorted, in fields written by `joined` (empty fields skipped)."""
    return sorted({part for field in fields if field for part in field.split(";")})


def frame_scale(frame: pd.DataFrame) -> str:
    """The scale a compare frame was measured at."""
    return joined(frame["scale"])


def _verdict(paper: float | None, ours: float | None, scale: str, tolerance: float) -> str:
    """The verdict of a cell whose row and column are both mapped."""
    if ours is None:
        return "missing"
    if paper is None:
        return "no_paper_value"
    if scale != FULL_SCALE:
        return "not_comparable"
    return "within" if abs(ours - paper) <= tolerance + _ROUNDING_SLACK else "outside"


def _term_value(term, results: dict) -> float:
    """The value of a column's term (a Measure, or a Mean of terms) from its measures' (value, provenance)."""
    if not isinstance(term, Mean):
        return results[term][0]
    return sum(_term_value(sub, results) for sub in term.terms) / len(term.terms)


def compare_table(spec: PaperSpec, table_name: str, metrics_dir, scale: str, blockers: Blockers | None = None):
    """One line per printed cell (rows, then columns, in printed order), then one per cell of each released
    checkpoint's row (`<row>__released`, against the row's printed numbers); see COLUMNS and VERDICTS.

    paper/ours/delta are NaN where absent; delta = ours - paper. `blockers`: the experiments and tasks the plan
    does not produce, which give a missing cell its reason (none given: a missing cell is not run yet, or lacks
    data where its task ran without writing the metric).
    """
    table = spec.table(table_name)
    expected = load_expected(table.expected_path)
    blockers = blockers or Blockers()
    cache = {}

    def measured(experiment: str, measure):
        """(value, provenance); None where the task has not run; False where it ran without writing the metric."""
        path = metrics_path(metrics_dir, experiment, measure.task)
        if (path, measure.metric) not in cache:
            cache[(path, measure.metric)] = (
                read_metric(path, experiment, measure.task, measure.metric, scale) or False) if path.is_file() else None
        return cache[(path, measure.metric)]

    lines = []
    for row, (printed, experiment) in table.compared_rows().items():
        for column, mapped in table.columns.items():
            cell = expected.cells[(printed, column)]
            line = {
                "row": row, "column": column, "experiment": experiment if isinstance(experiment, str) else "",
                "task": "", "metric": "", "tolerance": table.tolerance_for(column),
                "paper": cell.value, "paper_text": cell.printed or cell.token,
                "ours": None, "delta": None, "verdict": "external", "reason": "", "scale": scale,
                "config_hash": "", "git_commit": "", "date": "",
            }
            if isinstance(mapped, Column):
                line.update(task=mapped.task_label, metric=mapped.metric)
            if isinstance(mapped, Column) and isinstance(experiment, str):
                results = {measure: measured(experiment, measure) for measure in measures(mapped.term)}
                if all(results.values()):
                    line["ours"] = mapped.scale * _term_value(mapped.term, results)  # in the paper's printed units
                    if cell.value is not None:
                        line["delta"] = line["ours"] - cell.value
                    for key in ("config_hash", "git_commit", "date"):
                        line[key] = joined(provenance[key] for _, provenance in results.values())
                else:
                    lacking = any(result is False for result in results.values())
                    line["reason"] = missing_reason(experiment, mapped.tasks, blockers, lacking)
                line["verdict"] = _verdict(cell.value, line["ours"], scale, line["tolerance"])
            lines.append(line)
    frame = pd.DataFrame(lines, columns=list(COLUMNS))
    for name in _NUMBER_COLUMNS:
        frame[name] = frame[name].astype(float)
    return frame


def write_compare_csv(frame: pd.DataFrame, path) -> None:
    """Write a compare frame to `path` atomically (NaN as an empty field)."""
    with atomic_write(path, mode="w", newline="", encoding="utf-8") as handle:
        frame.to_csv(handle, index=False)


def read_compare_csv(path) -> pd.DataFrame:
    """Read a CSV written by `write_compare_csv`; InputError names the file if its columns or verdicts are off."""
    path = Path(path)
    try:
        frame = pd.read_csv(
            path, dtype={name: str for name in _TEXT_COLUMNS}, keep_default_na=False,
            na_values={name: [""] for name in _NUMBER_COLUMNS},
        )
    except FileNotFoundError:
        raise InputError(f"{path}: compare table not found") from None
    except (ValueError, pd.errors.ParserError) as error:
        raise InputError(f"{path}: unreadable compare table: {error}") from None
    if list(frame.columns) != list(COLUMNS):
        raise InputError(f"{path}: columns {list(frame.columns)}, expected {list(COLUMNS)}")
    unknown = sorted(set(frame["verdict"]) - set(VERDICTS))
    if unknown:
        raise InputError(f"{path}: unknown verdicts {unknown}")
    return frame


def table_provenance(frame: pd.DataFrame) -> dict:
    """Distinct config hashes, git commits and the date range of the metric JSONs behind a compare frame."""
    dates = split_joined(frame["date"])
    return {
        "scale": frame_scale(frame),
        "config_hashes": split_joined(frame["config_hash"]),
        "git_commits": split_joined(frame["git_commit"]),
        "first_date": dates[0] if dates else None,
        "last_date": dates[-1] if dates else None,
        "n_measured_cells": int(frame["ours"].notna().sum()),
    }
