"""Outputs other tools read: one CSV of every (model, task, metric) measured, and CLIP_benchmark's JSONs.

The CSV merges metric JSONs as `clip_benchmark build` merges its results, one line per metric: model (the experiment
id, `extra_<name>` for an extra model), source of its weights, task, metric, value, unit (the task registry's kind:
percent, fraction, correlation, nonnegative), whether higher is better, scale.

For the tasks CLIP_benchmark also has (LAION-AI/CLIP_benchmark, `clip_benchmark eval`), a JSON as it dumps one:
{"dataset", "model", "pretrained", "task", "metrics", "language"}, under its dataset names (`imagenet1k`,
`vtab/caltech101`, `mscoco_captions`...) and metric names, as fractions in [0, 1]: zero-shot classification `acc1` (our
top-1), `acc5` (our top-5; null, CLIP_benchmark's NaN, on a set of fewer than five classes or in a record measured
before hypvl computed it) and `mean_per_class_recall` (our mean per-class accuracy: the balanced accuracy it computes);
retrieval `image_retrieval_recall@K` (text -> image, our t2i) and `text_retrieval_recall@K` (image -> text, our i2t).
`model` and `pretrained` name the model as its `--model` and `--pretrained` would (`clip_benchmark_model`), the same
whether it was measured by the workflow or by `hypvl evaluate --source`. Keys beside them, which `clip_benchmark build`
turns into columns: `model_type` (its `--model_type`: the library that loads the model, `hypvl` for ours),
`hypvl_experiment`, and for zero-shot classification `prompts`, the prompt set the classifiers were built from (MERU's
Table 8 prompts by default, CLIP's under `eval_prompts: clip`; CLIP_benchmark's own are neither). The linear probe is
MERU's protocol (L-BFGS logistic regression, its cost searched on val, refit on train + val), not CLIP_benchmark's (a
linear layer trained by SGD): its score is `logreg_mean_per_class_recall`, never CLIP_benchmark's
`lp_mean_per_class_recall`, and `protocol` says which. CUB is none of its sets.
"""

import csv
import io
import json
import re
from pathlib import Path

from hypvl.errors import InputError
from hypvl.io import atomic_directory, atomic_write
from hypvl.replication.compare import read_metrics_record
from hypvl.tasks import all_tasks

CSV_COLUMNS = ("model", "source", "task", "metric", "value", "unit", "higher_is_better", "scale")
# our classification set -> CLIP_benchmark's dataset name (clip_benchmark/datasets/builder.py)
CLIP_BENCHMARK_DATASETS = {
    "imagenet": "imagenet1k", "cifar10": "cifar10", "cifar100": "cifar100", "sun397": "sun397",
    "caltech101": "vtab/caltech101", "stl10": "stl10", "food101": "food101", "cars": "cars",
    "aircraft": "fgvc_aircraft", "pets": "vtab/pets", "flowers": "vtab/flowers", "dtd": "dtd",
    "eurosat": "vtab/eurosat", "resisc45": "vtab/resisc45", "country211": "country211", "mnist": "mnist",
    "clevr": "vtab/clevr_count_all", "pcam": "vtab/pcam", "sst2": "renderedsst2",
}
RETRIEVAL_DATASETS = {"ret_coco": "mscoco_captions", "ret_flickr30k": "flickr30k"}
ZERO_SHOT_METRICS = {"top1": "acc1", "top5": "acc5", "mean_per_class_accuracy": "mean_per_class_recall"}
LINEAR_PROBE_METRICS = {"accuracy": "logreg_mean_per_class_recall"}  # MERU's protocol, not CLIP_benchmark's lp_*
LINEAR_PROBE_PROTOCOL = ("MERU App. C: L-BFGS logistic regression on frozen features, cost searched on val, refit on "
                         "train + val, mean per-class recall on test")
# open_clip's release names: an architecture and its pretrained tag (`open_clip.list_pretrained()`)
OPEN_CLIP_RELEASE = re.compile(r"^([\w.-]+)/([\w.-]+)$")


def metric_files(paths) -> list[Path]:
    """The metric JSONs `paths` name: files as given, a folder as every `*.json` beneath it (a results/<scale>/metrics
    folder, an experiment's, or the --out-dir of `hypvl evaluate`); a path that does not exist is an InputError."""
    files = []
    for path in map(Path, paths):
        if path.is_dir():
            files += sorted(path.rglob("*.json"))
        elif path.is_file():
            files.append(path)
        else:
            raise InputError(f"{path}: no such metric JSON or folder")
    return files


def read_records(paths, scale: str) -> list[dict]:
    """The checked records of the metric JSONs `paths` name (`metric_files`), each `<task>.json` of the experiment it
    records (whatever its folder is called), sorted by experiment and task."""
    records = [read_metrics_record(path, None, path.stem, scale) for path in metric_files(paths)]
    return sorted(records, key=lambda record: (record["experiment"], record["task"]))


def _source(record: dict) -> str:
    return str((record["provenance"].get("model") or {}).get("source", ""))


def metrics_csv(records: list[dict]) -> str:
    """The combined CSV of `records` (CSV_COLUMNS), one line per metric."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for record in records:
        task = all_tasks(record["scale"])[record["task"]]
        for name, value in sorted(record["metrics"].items()):
            declared = task.metric(name)
            writer.writerow([record["experiment"], _source(record), record["task"], name, repr(float(value)),
                             declared.kind, "" if declared.higher_is_better is None else declared.higher_is_better,
                             record["scale"]])
    return out.getvalue()


def clip_benchmark_model(identity: dict) -> dict:
    """How CLIP_benchmark would name the model `identity` (a record's `provenance.model`): `model` its architecture
    (ours: method and backbone; open_clip: the release's architecture, else the folder or hub id as open_clip loads
    it, `local-dir:<folder>` or `hf-hub:<id>`), `pretrained` its weights (ours: the experiment trained by the suite,
    an imported checkpoint's source or a hypvl checkpoint's path; open_clip: the release's tag), `model_type` the
    library loading it."""
    source = str(identity.get("source") or "")
    kind, _, where = source.partition(":")
    library = identity.get("library")
    if library == "open_clip":
        local = Path(where).exists() or where.startswith((".", "/"))
        release = None if local else OPEN_CLIP_RELEASE.match(where)
        if release:
            return {"model": release[1], "pretrained": release[2], "model_type": library}
        return {"model": ("local-dir:" if local else "hf-hub:") + where, "pretrained": "", "model_type": library}
    if library:
        return {"model": where, "pretrained": "", "model_type": library}
    model = "_".join(str(part) for part in (identity.get("method"), identity.get("backbone")) if part)
    return {"model": model or str(identity.get("experiment", "")),
            "pretrained": where if kind == "hypvl" else source or str(identity.get("experiment", "")),
            "model_type": "hypvl"}


def clip_benchmark_result(record: dict) -> dict | None:
    """CLIP_benchmark's JSON of one of our records (None for a task it does not have)."""
    task, metrics = record["task"], record["metrics"]
    extra = {}
    if task in RETRIEVAL_DATASETS:
        kind, dataset = "zeroshot_retrieval", RETRIEVAL_DATASETS[task]
        names = {f"{ours}_r{k}": f"{theirs}_retrieval_recall@{k}" for k in (1, 5, 10)
                 for ours, theirs in (("t2i", "image"), ("i2t", "text"))}
    elif task.startswith("zs_") and task[3:] in CLIP_BENCHMARK_DATASETS:
        kind, dataset, names = "zeroshot_classification", CLIP_BENCHMARK_DATASETS[task[3:]], ZERO_SHOT_METRICS
        extra = {"prompts": record["provenance"].get("prompts", "unrecorded (measured before hypvl recorded it)")}
        metrics = {"top5": None, **metrics}  # CLIP_benchmark writes acc5 on every set: NaN where undefined
    elif task.startswith("linprobe_") and task[9:] in CLIP_BENCHMARK_DATASETS:
        kind, dataset, names = "linear_probe", CLIP_BENCHMARK_DATASETS[task[9:]], LINEAR_PROBE_METRICS
        extra = {"protocol": LINEAR_PROBE_PROTOCOL}
    else:
        return None
    converted = {theirs: None if metrics[ours] is None else metrics[ours] / 100.0
                 for ours, theirs in names.items() if ours in metrics}
    named = clip_benchmark_model(record["provenance"].get("model") or {"experiment": record["experiment"]})
    return {"dataset": dataset, "model": named["model"], "pretrained": named["pretrained"], "task": kind,
            "metrics": converted, "language": "en", "model_type": named["model_type"],
            "hypvl_experiment": record["experiment"], **extra}


def clip_benchmark_name(result: dict) -> str:
    """The file of one CLIP_benchmark JSON: `{dataset}_{experiment}_{task}.json` (its `--output` template's fields,
    the experiment naming the model: unique, and a safe file name where model and pretrained may be paths)."""
    return f"{result['dataset'].replace('/', '_')}_{result['hypvl_experiment']}_{result['task']}.json"


def write_exports(paths, scale: str, csv_path, clip_benchmark_dir) -> None:
    """Write the combined CSV at `csv_path` and a CLIP_benchmark JSON per result it has into `clip_benchmark_dir`."""
    records = read_records(paths, scale)
    if not records:
        raise InputError(f"hypvl export: no metric JSONs in {', '.join(map(str, paths))}")
    with atomic_write(csv_path, mode="w", newline="", encoding="utf-8") as handle:
        handle.write(metrics_csv(records))
    with atomic_directory(Path(clip_benchmark_dir)) as folder:
        for record in records:
            result = clip_benchmark_result(record)
            if result is not None:
                (folder / clip_benchmark_name(result)).write_text(json.dumps(result, allow_nan=False),
                                                                  encoding="utf-8")
