"""benchmarks/gpu on the CPU (`--device cpu`, the smoke model): every configuration measured or failed with its error,
FLOPs per step as hypvl.cost plans them, throughput and MFU as defined, the budget honoured, JSON and markdown
written and the markdown printed last; and its batch search on a simulated GPU memory."""

import json
import subprocess
import sys

import pytest

from hypvl.config import load_config
from hypvl.cost import Run, model_towers

from conftest import REPO

SCRIPT = REPO / "benchmarks" / "gpu"
sys.path.insert(0, str(REPO / "benchmarks"))
from batch_search import largest_batch  # noqa: E402


def _run(out, *options) -> str:
    done = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--out", str(out), *options],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_cpu_run_measures_every_configuration_with_the_cost_models_flops(tmp_path):
    stdout = _run(tmp_path, "--backbones", "vit_s16,vit_x", "--batch", "6")
    results = json.loads((tmp_path / "gpu_benchmark.json").read_text())
    rows = {(r["method"], r["backbone"], r["precision"], r["compile"]): r for r in results["configurations"]}
    assert set(rows) == {(m, b, p, False) for m in ("clip", "meru", "hycoclip") for b in ("vit_s16", "vit_x")
                         for p in ("fp16", "bf16")}
    model = load_config()["model"]  # --device cpu measures the smoke model
    measured_peak = results["peaks"]["measured"]["tflops"] * 1e12
    assert results["peaks"]["datasheet_tflops"] is None  # no datasheet peak for a CPU
    for (method, backbone, precision, _), row in rows.items():
        if backbone == "vit_x":  # a failing configuration is recorded, and the others still run
            assert "step_s" not in row and "backbone 'vit_x' is not in the config" in row["error"]
            continue
        assert "error" not in row and row["batch"] == 6 and row["steps_timed"] == 2
        assert row["runs_as"] == {"fp16": "fp32", "bf16": "bf16"}[precision]  # the trainer's rule on a CPU
        encodings = 2 if method == "hycoclip" else 1  # HyCoCLIP encodes a box crop and its phrase per pair
        assert row["flops_per_step"] == Run(model_towers(model, backbone), 6, 1, encodings).flops
        steps_per_s = 1 / row["step_s"]
        assert row["pairs_per_s"] == pytest.approx(6 * steps_per_s)
        assert row["images_per_s"] == pytest.approx(6 * encodings * steps_per_s)
        assert row["mfu_measured"] == pytest.approx(row["flops_per_step"] * steps_per_s / measured_peak)
        assert row["mfu_datasheet"] is None and row["peak_gib"] is None
    evaluation = results["eval_pipeline"]
    assert evaluation["images"] == 24 and 40 < evaluation["jpeg_kb"] < 200
    assert evaluation["loader_processes"] == 2
    assert all(evaluation[f"{part}_images_per_s"] > 0 for part in ("pipeline_threads", "loading_threads", "encoder",
                                                                     "pipeline_processes", "loading_processes",
                                                                     "steady_pipeline_threads", "steady_loading_threads",
                                                                     "steady_pipeline_processes",
                                                                     "steady_loading_processes"))
    assert evaluation["bitwise"]["features"] is True  # uint8 pixels made floats where the encoder runs
    markdown = (tmp_path / "gpu_benchmark.md").read_text()
    assert stdout.rstrip().endswith(markdown.rstrip())  # printed last
    table = [line for line in markdown.splitlines() if line.startswith("| clip") or line.startswith("| meru")
             or line.startswith("| hycoclip")]
    assert len(table) == len(rows) and sum("InputError" in line for line in table) == 6
    assert {line.count("|") for line in table} == {markdown.splitlines()[-len(rows) - 2].count("|")}  # the header's


def test_no_configuration_starts_past_the_budget(tmp_path):
    _run(tmp_path, "--budget-s", "0", "--methods", "clip", "--backbones", "vit_s16")
    results = json.loads((tmp_path / "gpu_benchmark.json").read_text())
    assert [row["error"].split(":")[0] for row in results["configurations"]] == ["skipped", "skipped"]
    assert "skipped" in results["eval_pipeline"]["error"]


def test_compiled_configurations_take_inductors_modes(tmp_path):
    _run(tmp_path, "--budget-s", "0", "--methods", "clip", "--backbones", "vit_s16", "--precisions", "bf16",
         "--compile", "off,on,max-autotune-no-cudagraphs")
    results = json.loads((tmp_path / "gpu_benchmark.json").read_text())
    assert [(row["compile"], row["compile_mode"]) for row in results["configurations"]] == [
        (False, None), (True, "default"), (True, "max-autotune-no-cudagraphs")]
    table = [line.split("|")[4].strip() for line in (tmp_path / "gpu_benchmark.md").read_text().splitlines()
             if line.startswith("| clip")]
    assert table == ["off", "default", "max-autotune-no-cudagraphs"]
    done = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--compile", "off,max-autotune-fast"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 2 and "max-autotune-fast: not one of off, on, default," in done.stderr


@pytest.mark.parametrize("overestimate", [1.0, 1.3])
def test_batch_search_finds_a_batch_that_fits_near_the_largest(overestimate):
    """A simulated GPU: 1 GB resting, 10 MB per sample, 6.23 GB in all (523 samples fit: 520 is the largest multiple
    of 8). The search is told the usable memory exactly, or 30% too much (it then meets OOMs and bisects)."""
    resting, per_sample, limit = 1e9, 1e7, 6.23e9
    tried = []

    def fits(size):
        tried.append(size)
        peak = resting + per_sample * size
        return (peak, resting) if peak <= limit else None

    best, tries = largest_batch(fits, first=2000, usable=limit * overestimate)
    assert [size for size, _ in tries] == tried and len(tried) <= 5
    assert best % 8 == 0 and fits(best) is not None
    assert best == 520 if overestimate == 1.0 else best >= 0.9 * 520
    assert largest_batch(lambda size: None, first=64, usable=limit) == (None, [(64, None), (32, None), (16, None),
                                                                             (8, None)])


SNAKEMAKE_LOG = """Job stats:
job      count
-----  -------
a            2
b            1
total        3

[Fri Nov 27 07:41:54 2026]
localrule a:
    output: a1.txt
    jobid: 2
    resources: tmpdir=/tmp

[Fri Nov 27 07:41:54 2026]
rule a:
    output: a2.txt
    jobid: 3
[Fri Nov 27 07:41:55 2026]
Finished jobid: 2 (Rule: a)
1 of 3 steps (33%) done
[Fri Nov 27 07:41:58 2026]
Finished jobid: 3 (Rule: a)
[Mon Nov  9 07:41:58 2026]
localrule b:
    jobid: 1
[Mon Nov  9 07:43:00 2026]
Finished jobid: 1 (Rule: b)
"""


def test_the_pilot_rows_job_times_come_from_snakemakes_log():
    """Two jobs of one rule running side by side and one more (a log in Snakemake 9's format, times worked by hand:
    1 s, 4 s, 62 s; a one-digit day as Snakemake pads it)."""
    from pilot_row import job_seconds, per_rule

    jobs = job_seconds(SNAKEMAKE_LOG)
    assert [(job["rule"], job["jobid"], job["seconds"]) for job in jobs] == [("a", 2, 1.0), ("a", 3, 4.0),
                                                                              ("b", 1, 62.0)]
    assert per_rule(jobs) == {"a": {"jobs": 2, "total_s": 5.0, "max_s": 4.0}, "b": {"jobs": 1, "total_s": 62.0,
                                                                                   "max_s": 62.0}}
