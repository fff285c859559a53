"""benchmarks/gpu on the CPU (`--device cpu`, the smoke model): every configuration measured or failed with its error,
FLOPs per step as hypvl.workflow.cost plans them, throughput and MFU as defined, the budget honoured, JSON and markdown
written and the markdown printed last; and its batch search on a simulated GPU memory."""

import importlib.util
import json
import subprocess
import sys
from importlib.machinery import SourceFileLoader

import pytest

from hypvl.config import load_config
from hypvl.workflow.cost import Run, model_towers

from helpers import REPO

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
    assert set(rows) == {(m, b, p, False) for m in ("clip", "meru", "hycoclip", "open_clip")
                         for b in ("vit_s16", "vit_x") for p in ("fp16", "bf16")}
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
        if method == "open_clip":  # the peer, at our CLIP's batch: our images/s over its
            ours = rows[("clip", backbone, precision, False)]
            assert row["ours_over_peer"] == pytest.approx(row["step_s"] / ours["step_s"])
        else:
            assert "ours_over_peer" not in row
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
    table += [line for line in markdown.splitlines() if line.startswith("| open_clip")]
    assert len(table) == len(rows) and sum("InputError" in line for line in table) == 8
    assert sum("our CLIP's images/s are" in line for line in table) == 2
    assert {line.count("|") for line in table} == {markdown.splitlines()[-len(rows) - 2].count("|")}  # the header's


def test_compiled_configurations_take_inductors_modes_and_none_starts_past_the_budget(tmp_path):
    _run(tmp_path, "--budget-s", "0", "--methods", "clip", "--backbones", "vit_s16", "--precisions", "bf16",
         "--compile", "off,on,max-autotune-no-cudagraphs")
    results = json.loads((tmp_path / "gpu_benchmark.json").read_text())
    assert [row["error"].split(":")[0] for row in results["configurations"]] == ["skipped"] * 3  # a budget of 0 s
    assert "skipped" in results["eval_pipeline"]["error"]
    assert [(row["compile"], row["compile_mode"]) for row in results["configurations"]] == [
        (False, None), (True, "default"), (True, "max-autotune-no-cudagraphs")]
    table = [line.split("|")[4].strip() for line in (tmp_path / "gpu_benchmark.md").read_text().splitlines()
             if line.startswith("| clip")]
    assert table == ["off", "default", "max-autotune-no-cudagraphs"]
    done = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--compile", "off,max-autotune-fast"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 2 and "max-autotune-fast: not one of off, on, default," in done.stderr


def test_attention_kernels_are_configurations_of_their_own(tmp_path):
    """`--attention`: each kernel asked for is a configuration, after PyTorch's choice (auto), and the one that runs
    (on the CPU, PyTorch's flash kernel or its plain one, as the profile tells them apart), the peer compared with our
    CLIP under the same kernel; the markdown says which and each step's profile; a kernel train.attention does not know
    is refused."""
    _run(tmp_path, "--methods", "clip,open_clip", "--backbones", "vit_s16", "--precisions", "bf16",
         "--attention", "math,auto", "--batch", "4", "--profile")
    rows = json.loads((tmp_path / "gpu_benchmark.json").read_text())["configurations"]
    assert [(row["method"], row["attention"]) for row in rows] == [
        ("clip", "auto"), ("open_clip", "auto"), ("clip", "math"), ("open_clip", "math")]
    # PyTorch's CPU flash kernel is one operator of attention's kind (measured: a fifth of the step); its plain one,
    # matmuls and a softmax, leaves that kind about 1% (the dispatching operators' own time)
    for auto, math in ((rows[0], rows[2]), (rows[1], rows[3])):
        assert auto["profile"]["shares"]["attention"] > 5 * math["profile"]["shares"]["attention"]
    # `--profile` splits a step's operators' own time by kind of work, shares summing to 1, listed in the markdown
    profile = rows[0]["profile"]
    assert sum(profile["shares"].values()) == pytest.approx(1.0)
    assert profile["shares"]["matmul"] > 0.05 and 0 < profile["profiled_s"] and len(profile["top"]) == 8
    assert "clip vit_s16 bf16 compile off attention auto:" in (tmp_path / "gpu_benchmark.md").read_text()
    assert rows[3]["ours_over_peer"] == pytest.approx(rows[3]["step_s"] / rows[2]["step_s"])
    table = [line.split("|")[5].strip() for line in (tmp_path / "gpu_benchmark.md").read_text().splitlines()
             if line.startswith(("| clip", "| open_clip"))]
    assert table == ["auto", "auto", "math", "math"]
    done = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--attention", "auto,xformers"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 2 and "xformers: not one of auto, flash, cudnn, efficient, math" in done.stderr


def test_each_configuration_takes_the_batch_of_its_measured_twin():
    """No configuration searches a batch its twin found: the peer takes our CLIP's (same compile mode and attention),
    another attention kernel the batch of PyTorch's choice, a compiled one its eager twin's."""
    loader = SourceFileLoader("gpu_benchmark_script", str(SCRIPT))
    script = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(script)

    def row(method="clip", mode=None, attention="auto", batch=None):
        values = {"method": method, "backbone": "vit_b16", "precision": "bf16", "compile": mode is not None,
                  "compile_mode": mode, "attention": attention}
        return {**values, "batch": batch, "step_s": 1.0} if batch else values

    eager, compiled = row(batch=1616), row(mode="default", batch=1600)
    eager_flash, peer = row(attention="flash", batch=1500), row(method="open_clip", batch=1400)
    rows = [eager, compiled, eager_flash, peer, row(method="meru", batch=1200), row(method="hycoclip")]
    assert script.batch_twin(row(method="open_clip", mode="default"), rows) is compiled
    assert script.batch_twin(row(method="open_clip"), rows) is eager
    assert script.batch_twin(row(attention="cudnn"), rows) is eager
    assert script.batch_twin(row(mode="default", attention="flash"), rows) is compiled
    assert script.batch_twin(row(attention="flash", mode="default"), rows[2:]) is eager_flash
    assert script.batch_twin(row(method="meru", mode="default", attention="flash"), rows)["batch"] == 1200
    assert script.batch_twin(row(method="hycoclip", mode="default"), rows) is None
    assert script.batch_twin(row(), rows) is None  # an eager one with PyTorch's kernel searches its own


def test_a_time_limit_outlasts_code_that_swallows_its_exception():
    """Inductor's autotuning catches and logs every exception, the limit's too (seen on an H200: a 240 s limit on a
    max-autotune compile that ran on to the script's outer timeout). The limit fires again until it lands."""
    import time

    from step_timing import REFIRE_S, OutOfTime, time_limit

    swallowed, started, ended = [], time.monotonic(), None
    try:
        with time_limit(0.05):
            while not swallowed:  # work that catches everything, as inductor's does
                try:
                    time.sleep(0.01)
                except OutOfTime:
                    swallowed.append(time.monotonic() - started)
            while time.monotonic() - started < 5:
                time.sleep(0.01)
    except OutOfTime:
        ended = time.monotonic() - started
    assert len(swallowed) == 1 and ended is not None and ended < 0.05 + REFIRE_S + 1.0
    time.sleep(REFIRE_S + 0.2)  # no alarm is left behind once the limited code is left (it would raise here)


@pytest.mark.parametrize("name, kind", [
    ("nvjet_tst_256x128_64x4_2x1_v_bz_coopB_TNT", "matmul"),  # cuBLAS on Hopper
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64", "matmul"),
    ("triton_tem_fused_addmm_gelu_3", "matmul"),  # inductor's matmul template, its epilogue fused
    ("triton_per_fused_native_layer_norm_7", "fused (inductor)"),
    ("triton_poi_fused__scaled_dot_product_flash_attention_0", "fused (inductor)"),
    ("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits>", "attention"),
    ("fmha_cutlassB_bf16_aligned_64x64_k64_sm80", "attention"),
    ("void at::native::multi_tensor_apply_kernel<FusedAdamWMathFunctor<float, 4>>", "optimizer"),
    ("Memcpy DtoD (Device -> Device)", "copy"),
    ("void at::native::vectorized_layer_norm_kernel<c10::BFloat16, float>", "normalisation"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>", "other"),
    ("aten::addmm", "matmul"), ("aten::_scaled_dot_product_flash_attention_for_cpu", "attention"),
])
def test_kernels_are_told_apart_by_name(name, kind):
    from step_profile import kind_of

    assert kind_of(name) == kind


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
