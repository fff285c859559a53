"""Outputs other tools read: one CSV of every (model, task, metric) measured, and CLIP_benchmark's JSONs.

The CSV merges metric JSONs as `clip_benchmark build` merges its results, one line per metric: model (the experiment
id, `extra_<name>` for an extra model), source of its weights, task, metric, value, unit (the task registry's kind:
percent, fraction, correlation, nonnegative), whether higher is better, scale.

For the tasks CLIP_benchmark also has (LAION-AI/CLIP_benchmark, `clip_benchmark eval`), a JSON as it dumps one:
{"dataset", "model", "pretrained", "task", "metrics", "language"}, under its dataset names (`imagenet1k`,
`vtab/caltech101`, `mscoco_captions`...) and metric names, as fractions in [0, 1]: zero-shot classification `acc1`
(our top-1) and `mean_per_class_recall` (our mean per-class accuracy: the balanced accuracy it computes); retrieval
`image_retrieval_recall@K` (text -> image, our t2i) and `text_retrieval_recall@K` (image -> text, our i2t); the
linear probe `lp_mean_per_class_recall` (ours scores mean per-class accuracy). `model` is the experiment, `pretrained`
the checkpoint measured. Metrics CLIP_benchmark computes and we do not (acc5) are absent; CUB is none of its sets.
"""

import csv
import io
import json
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
ZERO_SHOT_METRICS = {"top1": "acc1", "mean_per_class_accuracy": "mean_per_class_recall"}
LINEAR_PROBE_METRICS = {"accuracy": "lp_mean_per_class_recall"}


def read_records(paths, scale: str) -> list[dict]:
    """The checked records of metric JSONs `<metrics>/<experiment>/<task>.json`, sorted by experiment and task."""
    records = [read_metrics_record(Path(path), Path(path).parent.name, Path(path).stem, scale) for path in paths]
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


def clip_benchmark_result(record: dict) -> dict | None:
    """CLIP_benchmark's JSON of one of our records (None for a task it does not have)."""
    task, metrics = record["task"], record["metrics"]
    if task in RETRIEVAL_DATASETS:
        kind, dataset = "zeroshot_retrieval", RETRIEVAL_DATASETS[task]
        names = {f"{ours}_r{k}": f"{theirs}_retrieval_recall@{k}" for k in (1, 5, 10)
                 for ours, theirs in (("t2i", "image"), ("i2t", "text"))}
    elif task.startswith("zs_") and task[3:] in CLIP_BENCHMARK_DATASETS:
        kind, dataset, names = "zeroshot_classification", CLIP_BENCHMARK_DATASETS[task[3:]], ZERO_SHOT_METRICS
    elif task.startswith("linprobe_") and task[9:] in CLIP_BENCHMARK_DATASETS:
        kind, dataset, names = "linear_probe", CLIP_BENCHMARK_DATASETS[task[9:]], LINEAR_PROBE_METRICS
    else:
        return None
    converted = {theirs: metrics[ours] / 100.0 for ours, theirs in names.items() if ours in metrics}
    return {"dataset": dataset, "model": record["experiment"],
            "pretrained": record["provenance"].get("checkpoint") or _source(record), "task": kind,
            "metrics": converted, "language": "en"}


def clip_benchmark_name(result: dict) -> str:
    """The file of one CLIP_benchmark JSON: `{dataset}_{model}_{task}.json` (its `--output` template's fields)."""
    return f"{result['dataset'].replace('/', '_')}_{result['model']}_{result['task']}.json"


def write_exports(paths, scale: str, csv_path, clip_benchmark_dir) -> None:
    """Write the combined CSV at `csv_path` and a CLIP_benchmark JSON per result it has into `clip_benchmark_dir`."""
    records = read_records(paths, scale)
    if not records:
        raise InputError("hypvl export: no metric JSONs given")
    with atomic_write(csv_path, mode="w", newline="", encoding="utf-8") as handle:
        handle.write(metrics_csv(records))
    with atomic_directory(Path(clip_benchmark_dir)) as folder:
        for record in records:
            result = clip_benchmark_result(record)
            if result is not None:
                (folder / clip_benchmark_name(result)).write_text(json.dumps(result, allow_nan=False),
                                                                  encoding="utf-8")
