"""Join a table's printed numbers with our metric JSONs: one line per printed cell with a verdict.

Verdicts, in order of precedence:
  external            the row or column is outside the suite (the spec says why)
  extra               a row of an extra model (config `extra_models`, hypvl.outside.extras): its number, compared
                      with none
  missing             a metric the cell needs is not measured; `reason` says why (hypvl.replication.coverage)
  no_paper_value      the paper prints no number there (`-`, `dnc`, `n/a`); ours is still shown
  not_comparable      measured at a scale other than `full` (smoke numbers do not estimate the paper's)
  within/outside      |ours - paper| <= tolerance, or not
  within_seed_spread  outside the tolerance, but |ours - paper| <= SEED_SPREAD standard deviations of a row
                      trained with several seeds (config `seeds`): seed noise alone moves our number that far

A row trained with several seeds reports the mean over its seeds (`ours`), their number (`n_seeds`) and sample
standard deviation (`spread`). Numbers measured at another scale, under another run config (the workflow settings
every model of a run shares, recorded in each metric JSON), on another experiment's model, or on a checkpoint that
has changed since, are never joined in one table (`hypvl.replication.consistency`): compare names the file and
what differs.
"""

import json
import statistics
from pathlib import Path

import pandas as pd

from hypvl.errors import NUMBER_LIMIT, InputError, number_problem, shown
from hypvl.spec.expected import Cell, load_expected
from hypvl.outside.extras import EXTRA_ROW
from hypvl.io import atomic_write
from hypvl.replication.consistency import check_joined
from hypvl.replication.coverage import Blockers, missing_reason
from hypvl.spec.paper import Experiment, PaperSpec, seed_variant
from hypvl.spec.terms import Column, Mean, measures
from hypvl.tasks import metric_problem

VERDICTS = ("within", "outside", "within_seed_spread", "not_comparable", "no_paper_value", "missing", "external",
            "extra")
FULL_SCALE = "full"
SEED_SPREAD = 2.0  # standard deviations of the seeds
PROVENANCE_KEYS = ("config_hash", "run_config_hash", "git_commit", "git_dirty", "packages", "data_manifest_hash",
                   "checkpoint_sha256", "date")  # joined per cell from its metric JSONs
COLUMNS = (
    "row", "column", "experiment", "task", "metric", "tolerance", "paper", "paper_text",
    "ours", "delta", "verdict", "reason", "scale", "n_seeds", "spread", *PROVENANCE_KEYS,
)
_TEXT_COLUMNS = ("row", "column", "experiment", "task", "metric", "paper_text", "verdict", "reason", "scale",
                 *PROVENANCE_KEYS)
_NUMBER_COLUMNS = ("tolerance", "paper", "ours", "delta", "spread")
_ROUNDING_SLACK = 1e-9  # |delta| == tolerance up to float error counts as within


def metrics_path(metrics_dir, experiment: str, task: str) -> Path:
    """Where the metrics JSON of (experiment, task) lives: `<metrics_dir>/<experiment>/<task>.json`."""
    return Path(metrics_dir) / experiment / f"{task}.json"


def read_metrics_record(path: Path, experiment: str | None, task: str, scale: str) -> dict:
    """The record of a metrics JSON, checked: InputError names the file when it is not JSON, belongs to
    another experiment (None: any it names), task or scale, holds no metrics, a metric or sample count that is no
    finite number within ±NUMBER_LIMIT, or no provenance."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise InputError(f"{path}:{error.lineno}: not valid JSON: {error.msg}") from None
    except ValueError as error:  # an integer of over 4300 digits
        raise InputError(f"{path}: not valid JSON: {error}") from None
    if not isinstance(record, dict):
        raise InputError(f"{path}: expected a JSON object")
    if experiment is None and not (isinstance(record.get("experiment"), str) and record["experiment"]):
        raise InputError(f"{path}: experiment is {record.get('experiment')!r}, expected an experiment id")
    for key, wanted in (("experiment", experiment), ("task", task), ("scale", scale)):
        if wanted is not None and record.get(key) != wanted:
            raise InputError(f"{path}: {key} is {record.get(key)!r}, expected {wanted!r}")
    metrics = record.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        raise InputError(f"{path}: no metrics")
    numbers = {**{f"metric {name!r}": value for name, value in metrics.items()},
               **({"n_samples": record["n_samples"]} if "n_samples" in record else {})}
    for name, value in numbers.items():
        if number_problem(value) is not None:
            raise InputError(f"{path}: {name} is {shown(value)}, {number_problem(value)}")
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
    """Distinct values, sorted, joined by ';' (one cell may rest on several JSONs); a mapping as `key=value ...`."""
    return ";".join(sorted({" ".join(f"{k}={v}" for k, v in sorted(value.items())) if isinstance(value, dict)
                            else str(value) for value in values}))


def split_joined(fields) -> list[str]:
    """The distinct values, sorted, in fields written by `joined` (empty fields skipped)."""
    return sorted({part for field in fields if field for part in field.split(";")})


def frame_scale(frame: pd.DataFrame) -> str:
    """The scale a compare frame was measured at."""
    return joined(frame["scale"])


def _verdict(paper: float | None, ours: float | None, scale: str, tolerance: float, spread: float | None) -> str:
    """The verdict of a cell whose row and column are both mapped (`spread`: its seeds' standard deviation)."""
    if ours is None:
        return "missing"
    if paper is None:
        return "no_paper_value"
    if scale != FULL_SCALE:
        return "not_comparable"
    if abs(ours - paper) <= tolerance + _ROUNDING_SLACK:
        return "within"
    return "within_seed_spread" if spread is not None and abs(ours - paper) <= SEED_SPREAD * spread else "outside"


def _term_value(term, results: dict) -> float:
    """The value of a column's term (a Measure, or a Mean of terms) from its measures' (value, provenance)."""
    if not isinstance(term, Mean):
        return results[term][0]
    return sum(_term_value(sub, results) for sub in term.terms) / len(term.terms)


def _check_seeds(spec: PaperSpec, table_name: str, seeds: dict) -> None:
    """InputError unless `seeds` maps rows of the table to lists of seeds."""
    rows = spec.table(table_name).experiments()
    for experiment, chosen in seeds.items():
        if experiment not in rows:
            raise InputError(f"--seeds: {experiment!r} is not the experiment of a row of {spec.path} {table_name}")
        if not (isinstance(chosen, list) and chosen and all(isinstance(seed, int) for seed in chosen)):
            raise InputError(f"--seeds: {experiment!r} needs a list of seeds, not {chosen!r}")


def compare_table(spec: PaperSpec, table_name: str, metrics_dir, scale: str, *, seeds: dict | None = None,
                  blockers: Blockers | None = None, extras: dict | None = None) -> pd.DataFrame:
    """One line per printed cell (rows, then columns, in printed order), then one per cell of each released
    checkpoint's row (`<row>__released`, against the row's printed numbers); see COLUMNS and VERDICTS.

    paper/ours/delta are NaN where absent; delta = ours - paper. `seeds` ({experiment: [seed, ...]}) makes a
    row the mean over those seeds' models (`hypvl train --seed`), each needed in full for the cell. `blockers`:
    the experiments and tasks the plan does not produce, which give a missing cell its reason (none given: a
    missing cell is not run yet, or lacks data where its task ran without writing the metric). `extras`: {row:
    {experiment, source, ...}} of the extra models entering the table, each a last row of its own, its cells read as
    the columns say and given verdict `extra` (or missing), never a paper number.
    """
    table = spec.table(table_name)
    expected = load_expected(table.expected_path)
    seeds = seeds or {}
    _check_seeds(spec, table_name, seeds)
    blockers = blockers or Blockers()
    cache, provenances = {}, {}
    extra_rows = _check_extras(spec, extras or {})
    extra_experiments = {extra.id: extra for extra in extra_rows.values()}

    def measured(run: str, declared: str, measure):
        """(value, provenance) of `run` (a model of experiment `declared`); None where the task has not run; False
        where it ran without writing the metric."""
        path = metrics_path(metrics_dir, run, measure.task)
        if (path, measure.metric) not in cache:
            result = (read_metric(path, run, measure.task, measure.metric, scale) or False
                      ) if path.is_file() else None
            cache[(path, measure.metric)] = result
            if result:
                provenances[path] = (result[1], spec.experiments.get(declared) or extra_experiments[declared])
        return cache[(path, measure.metric)]

    rows = {row: (printed, None) for row, (printed, _) in table.compared_rows().items()}
    rows.update({row: (None, extra) for row, extra in extra_rows.items()})
    lines = []
    for row, (printed, extra) in rows.items():
        for column in table.columns:
            experiment, mapped = table.cell(row, column) if extra is None else (extra.id, table.columns[column])
            runs = ([seed_variant(spec.experiments[experiment], seed) for seed in seeds.get(experiment, [])]
                    or [experiment]) if isinstance(experiment, str) else []
            cell = expected.cells[(printed, column)] if extra is None else _NO_CELL
            line = {
                "row": row, "column": column, "experiment": experiment if isinstance(experiment, str) else "",
                "task": "", "metric": "", "tolerance": table.tolerance_for(column),
                "paper": cell.value, "paper_text": cell.printed or cell.token,
                "ours": None, "delta": None, "verdict": "external", "reason": "", "scale": scale, "n_seeds": None,
                "spread": None, **dict.fromkeys(PROVENANCE_KEYS, ""),
            }
            if isinstance(mapped, Column):
                line.update(task=mapped.task_label, metric=mapped.metric)
            if isinstance(mapped, Column) and isinstance(experiment, str):
                results = [{measure: measured(run, experiment, measure) for measure in measures(mapped.term)}
                           for run in runs]
                if all(all(run.values()) for run in results):
                    # per seed, in the paper's printed units
                    values = [mapped.scale * _term_value(mapped.term, run) for run in results]
                    line["ours"] = sum(values) / len(values)
                    line["n_seeds"] = len(values)
                    line["spread"] = statistics.stdev(values) if len(values) > 1 else None
                    if cell.value is not None:
                        line["delta"] = line["ours"] - cell.value
                    for key in PROVENANCE_KEYS:
                        line[key] = joined(provenance.get(key, "") for run in results for _, provenance in run.values())
                else:
                    lacking = any(result is False for run in results for result in run.values())
                    line["reason"] = missing_reason(experiment, mapped.tasks, blockers, lacking)
                line["verdict"] = _verdict(cell.value, line["ours"], scale, line["tolerance"], line["spread"])
                if extra is not None and line["ours"] is not None:
                    line["verdict"] = "extra"
            lines.append(line)
    check_joined(provenances)
    frame = pd.DataFrame(lines, columns=list(COLUMNS))
    for name in _NUMBER_COLUMNS:
        frame[name] = frame[name].astype(float)
    frame["n_seeds"] = frame["n_seeds"].astype("Int64")
    return frame


_NO_CELL = Cell("", None, "", False, False, None)  # an extra model's cell: no printed number


def _check_extras(spec: PaperSpec, extras: dict) -> dict[str, Experiment]:
    """{row: the Experiment of an extra model} of `--extras`; InputError names what is wrong."""
    checked = {}
    for row, extra in extras.items():
        if (not row.startswith(EXTRA_ROW) or not isinstance(extra, dict)
                or not all(isinstance(extra.get(key), str) for key in ("experiment", "source"))):
            raise InputError(f"--extras: {row!r} must be {EXTRA_ROW}<name> -> {{experiment, source}}, not {extra!r}")
        if extra["experiment"] in spec.experiments:
            raise InputError(f"--extras: {extra['experiment']!r} is an experiment of {spec.path}, not an extra model")
        checked[row] = Experiment(id=extra["experiment"], method="", backbone="", data="", boxes=False,
                                  source=extra["source"], seed=0)
    return checked


def write_compare_csv(frame: pd.DataFrame, path) -> None:
    """Write a compare frame to `path` atomically (NaN as an empty field)."""
    with atomic_write(path, mode="w", newline="", encoding="utf-8") as handle:
        frame.to_csv(handle, index=False)


def read_compare_csv(path) -> pd.DataFrame:
    """Read a CSV written by `write_compare_csv`; InputError names the file if its columns or verdicts are off."""
    path = Path(path)
    try:
        frame = pd.read_csv(
            path, dtype={**{name: str for name in _TEXT_COLUMNS}, "n_seeds": "Int64"}, keep_default_na=False,
            na_values={name: [""] for name in (*_NUMBER_COLUMNS, "n_seeds")},
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
    for name in _NUMBER_COLUMNS:  # pandas reads a 400-digit number as text, or as inf
        values = pd.to_numeric(frame[name].astype(str), errors="coerce").astype(float)
        bad = frame[name].notna() & ~(values.abs() <= NUMBER_LIMIT)
        if bad.any():
            line = int(bad.to_numpy().argmax())
            raise InputError(f"{path}:{line + 2}: {name} is {shown(frame[name].iloc[line])}, not a finite number "
                             f"within ±{NUMBER_LIMIT:g}")
        frame[name] = values
    return frame


def table_provenance(frame: pd.DataFrame) -> dict:
    """The distinct values of each PROVENANCE_KEYS column (a list under the column's name) and the date range of
    the metric JSONs behind a compare frame."""
    dates = split_joined(frame["date"])
    return {
        "scale": frame_scale(frame),
        **{key: split_joined(frame[key]) for key in PROVENANCE_KEYS if key != "date"},
        "first_date": dates[0] if dates else None,
        "last_date": dates[-1] if dates else None,
        "n_measured_cells": int(frame["ours"].notna().sum()),
    }
