"""hypvl.workflow.cost: parameter and FLOP counts against real models (timm, torch's FLOP counter), and the jobs it sizes
against the hardware and hours the papers report (MERU App., HyCoCLIP Sec. 4 and App. B)."""

import json
import math
import shlex

import pytest
import timm
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from hypvl.config import load_config
from hypvl.workflow.cost import Run, Tower, gpu_counts, loader_seconds, model_towers, runtime_minutes
from hypvl.errors import InputError
from hypvl.models.build import build_model
from hypvl.workflow import Plan

A100 = {"per_node": 8, "max_nodes": 4, "memory_gb": 80, "peak_tflops": 312, "utilisation": 0.22, "cpus": 8,
        "mem_mb": 64000}
V100 = {**A100, "memory_gb": 32, "peak_tflops": 125}  # V100 SXM2 32 GB: 125 TFLOPS FP16 tensor cores
UNLIMITED = 10**9  # minutes: size by memory alone, as the papers' own hardware was chosen
FULL = load_config(["workflows/config/full.yaml"])


def test_parameters_match_timm_vit_base():
    """Kaplan et al.'s 12 * depth * width^2 plus the patch and position embeddings count timm's ViT-B/16 (no
    head) to within its biases and LayerNorm gains (< 0.2%)."""
    model = timm.create_model("vit_base_patch16_224", pretrained=False, num_classes=0)
    real = sum(p.numel() for p in model.parameters())
    image, _ = model_towers(FULL["model"], "vit_b16")
    assert image.tokens == 197 and image.block_params == 12 * 12 * 768**2
    assert abs(image.params - real) / real < 2e-3


def matmul_flops(run) -> int:
    """The FLOPs torch's counter finds in `run()` outside the patch embedding's convolution, attention computed by
    its plain path (the fused CPU kernel is not counted)."""
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        run()
    counts = counter.get_flop_counts()["Global"]
    return sum(flops for op, flops in counts.items() if "convolution" not in str(op))


@pytest.mark.parametrize("tower_name", ["image", "text"])
def test_flops_equal_torch_flop_counter_on_the_paper_towers(tower_name):
    """PaLM's model FLOPs (2N per token and attention's two token-by-token products; training 3x) are exactly
    what torch's FLOP counter counts in the paper's ViT-S/16 at 224 px and 77-token text transformer (full.yaml),
    forward and forward + backward, the patch embedding apart."""
    torch.manual_seed(0)
    model = build_model("clip", "vit_s16", FULL["model"])
    towers = dict(zip(["image", "text"], model_towers(FULL["model"], "vit_s16")))
    encoder, inputs = {"image": (model.visual, torch.rand(2, 3, 224, 224)),
                       "text": (model.textual, torch.randint(1, 49000, (2, 77)))}[tower_name]
    tower = towers[tower_name]
    assert matmul_flops(lambda: encoder(inputs)) == 2 * tower.forward_flops
    assert matmul_flops(lambda: encoder(inputs).sum().backward()) == Run((tower,), batch_size=2, steps=1).flops
    attention = 4 * tower.depth * tower.tokens**2 * tower.width
    assert tower.forward_flops == 2 * tower.block_params * tower.tokens + attention
    assert Run((tower,), 2, 1, frozen=True).flops == 2 * tower.forward_flops


def test_activation_memory_is_korthikanti_eq_1():
    """A case worked by hand: 197 tokens x 768 wide x (34 + 5 * 12 * 197 / 768) bytes per layer, 12 layers."""
    tower = Tower(tokens=197, width=768, depth=12, heads=12)
    assert tower.activation_bytes == pytest.approx(12 * 197 * 768 * (34 + 5 * 12 * 197 / 768))
    both = Run((tower,), batch_size=8, steps=1, encodings=2)
    assert both.gpu_bytes(2) == pytest.approx(16 * tower.params + 8 * tower.activation_bytes)


def test_gpu_counts_split_the_batch_evenly():
    assert gpu_counts(768, 8, 4) == [1, 2, 4, 8, 16, 32]
    assert gpu_counts(896, 8, 4) == [1, 2, 4, 8, 16, 32]  # 896 = 7 * 128
    assert gpu_counts(6, 8, 1) == [1, 2]


def plan_with(gpu: dict, max_runtime: int = UNLIMITED) -> Plan:
    return Plan({**FULL, "resources": {**FULL["resources"], "gpu": gpu, "max_runtime": max_runtime}})


def test_memory_alone_picks_the_papers_hardware():
    """MERU App. ('Fitting the model on 8-GPUs'): CLIP ViT-S/16 with mixed precision needs 16 V100 32GB at batch
    4096 and fits on 8 at 2048; HyCoCLIP App. B trains at batch 768 on 4 A100 (which 2 A100 of 80 GB could not
    hold: a box image and text per sample double the activations)."""
    v100 = plan_with(V100)
    assert v100.training.job("meru_clip_vits").gpus == 8
    assert v100.training.job("meru_clip_vits_yfcc_bs4096").gpus == 16
    assert plan_with(A100).training.job("hyco_hycoclip_vitb_grit").gpus == 4


@pytest.mark.parametrize("plan_gpu, experiment, gpus, hours", [
    (V100, "meru_clip_vits", 8, 14),            # MERU App.: "within ~14 hours" on 8 V100
    (A100, "hyco_clip_vitb_grit", 4, 45),       # HyCoCLIP Sec. 4 (Computational complexity), 4 A100 (App. B)
    (A100, "hyco_meru_vitb_grit", 4, 46),
    (A100, "hyco_hycoclip_vitb_grit", 4, 73),
], ids=["meru_clip_vits_v100", "hyco_clip_vitb", "hyco_meru_vitb", "hyco_hycoclip_vitb"])
def test_runtime_request_covers_the_papers_hours(plan_gpu, experiment, gpus, hours):
    """The runtime asked for is at least what the paper's run took on the same GPUs, and not wildly more (the
    FLOP count charges HyCoCLIP's box encodings in full; its measured overhead is 73/45 = 1.6x, ours 2x)."""
    minutes = runtime_minutes(Plan(FULL).training.run(experiment), gpus, plan_gpu, FULL["resources"]["runtime_margin"])
    assert hours * 60 <= minutes <= 1.75 * hours * 60


def test_a_vit_l_meru_run_asks_for_one_full_node():
    """MERU ViT-L/16 (120k steps, batch 2048) on full.yaml's A100 nodes, worked by hand: a rank's 256 samples keep
    256 * (239.1 + 18.9) MB of activations plus 16 B x 366M parameters = 71.9 GB <= 0.9 x 80 GiB, which 4 GPUs
    (512 samples each) cannot hold; 6 * (302M * 197 + 2 * 24 * 197^2 * 1024 + 37.7M * 77 + 2 * 12 * 77^2 * 512) FLOPs
    (blocks and attention of both towers) * 2048 * 120k over 8 x 312 TFLOPS x 0.22, times 1.25, is 3602 minutes
    (60 h, within the 72 h limit); 8 GPUs take 8 x 8 cores and 8 x 64 GB."""
    plan = Plan(FULL)
    run = plan.training.run("meru_meru_vitl")
    assert run.gpu_bytes(8) <= 0.9 * 80 * 2**30 < run.gpu_bytes(4)
    flops = 6 * (12 * 24 * 1024**2 * 197 + 2 * 24 * 197**2 * 1024 + 12 * 12 * 512**2 * 77 + 2 * 12 * 77**2 * 512)
    flops *= 2048 * 120_000
    assert run.flops == flops
    job = plan.training.job("meru_meru_vitl")
    assert (job.gpus, job.nodes, job.threads, job.mem_mb) == (8, 1, 64, 512_000)
    assert job.runtime == math.ceil(flops / (8 * 312e12 * 0.22) * 1.25 / 60) == 3602
    assert plan.training.resources("meru_meru_vitl") == {
        "gpu": 8, "gres": None, "nodes": 1, "mem_mb": 512_000, "runtime": 3602, "cpus_per_task": 64, "mpi": None,
        "tasks": None, "tasks_per_gpu": None}
    assert plan.training.launcher("meru_meru_vitl", 2) == (
        "torchrun --standalone --nproc-per-node 8 -m hypvl.cli train --threads 8")


def test_longer_runs_take_more_gpus_or_continue_in_further_jobs():
    """Within max_runtime the GPU count grows past what memory needs (HyCoCLIP ViT-B: 4 -> 8 GPUs for a 72 h
    limit); where even every GPU allowed is too slow, the job asks for the limit and the run continues from its
    checkpoint in further attempts (the train rule's retries)."""
    assert plan_with(A100, 4320).training.job("hyco_hycoclip_vitb_grit").gpus == 8
    slow = plan_with({**A100, "max_nodes": 1, "per_node": 2}, 1440)
    job = slow.training.job("hyco_hycoclip_vitb_grit")
    assert (job.gpus, job.runtime) == (2, 1440) and job.needed > 1440
    assert job.attempts == math.ceil(job.needed / 1440) and slow.training.retries() >= job.attempts - 1


def test_a_run_over_several_nodes_starts_one_torchrun_per_node():
    plan = plan_with({**A100, "per_node": 4}, 4320)
    job = plan.training.job("meru_meru_vitl")
    assert (job.gpus, job.nodes, job.gpus_per_node) == (8, 2, 4)
    resources = plan.training.resources("meru_meru_vitl")
    assert resources["gpu"] is None and resources["gres"] == "gpu:4" and resources["nodes"] == 2
    assert resources["mpi"] == "srun" and resources["tasks"] == 2 and resources["tasks_per_gpu"] == 0
    launch = plan.training.launcher("meru_meru_vitl", 2)
    assert launch.startswith("srun --nodes 2 --ntasks-per-node 1 ")
    assert " torchrun --nnodes 2 --nproc-per-node 4 --rdzv-backend c10d " in launch
    assert launch.endswith("-m hypvl.cli train --threads 8")


def test_smoke_training_stays_one_cpu_process():
    plan = Plan(load_config())
    assert plan.training.job("hyco_clip_vits_grit") is None and plan.training.retries() is None
    assert plan.training.launcher("hyco_clip_vits_grit", 1) == "hypvl train --threads 1"
    assert plan.training.resources("hyco_clip_vits_grit") == {"gpu": None, "mem_mb": 2000, "runtime": 30}


def test_a_lab_with_fewer_gpus_trains_the_papers_batch_in_micro_batches():
    """MERU ViT-L/16 (batch 2048, 120k steps) on one node of 4 A100-80GB, worked by hand from the case above: a
    rank's 512 samples keep 512 x 258.1 MB of activations (132 GB, over 0.9 x 80 GiB on each of 1, 2 or 4 GPUs),
    2 micro-batches of 256 keep half (71.9 GB with the 5.9 GB of model state, as a rank of 8 GPUs). A step then runs
    the encoders' forward pass once more (4 passes of 3): ceil(F x 4/3 / (4 x 312 TFLOPS x 0.22) x 1.25 / 60) = 9605
    minutes, over the 72 h limit on every count allowed, so the job asks for all 4 GPUs and 72 h, and continues in
    2 further attempts; the train job's config says 2 micro-batches."""
    plan = plan_with({**A100, "per_node": 4, "max_nodes": 1}, 4320)
    run = plan.training.run("meru_meru_vitl")
    assert run.gpu_bytes(4, 2) == run.gpu_bytes(8) <= 0.9 * 80 * 2**30 < run.gpu_bytes(4)
    flops = 6 * (12 * 24 * 1024**2 * 197 + 2 * 24 * 197**2 * 1024 + 12 * 12 * 512**2 * 77 + 2 * 12 * 77**2 * 512)
    flops *= 2048 * 120_000
    assert run.work(2) == flops * 4 / 3 and run.work(1) == flops
    job = plan.training.job("meru_meru_vitl")
    assert (job.gpus, job.accum_steps, job.runtime, job.attempts) == (4, 2, 4320, 3)
    assert job.needed == math.ceil(flops * 4 / 3 / (4 * 312e12 * 0.22) * 1.25 / 60) == 9605
    train = json.loads(shlex.split(plan.training.experiment_config("meru_meru_vitl"))[0])["train"]
    assert train["accum_steps"] == 2 and train["batch_size_scale"] == 1.0


def test_the_fewest_gpus_that_finish_in_time_accumulate_where_the_batch_does_not_fit():
    """MERU ViT-S/16 (2048, 120k steps) on one node of 4 A100-40GB (36 GiB usable) within 72 h: 512 samples a rank
    (4 GPUs) keep 512 x 77.7 MB + 1.4 GB = 41.2 GB = 38.3 GiB: too much, so no count fits in one pass. With
    accumulation, the fewest GPUs that finish in time: 1 GPU in 8 micro-batches of 256 (21.3 GB) would take
    ceil(F x 4/3 / (312 TFLOPS x 0.22) x 1.25 / 60) = 4488 minutes > 4320 (3366 in one pass, which does not fit),
    so 2 GPUs in 4 micro-batches of 256 (2 of 512 would be 38.3 GiB again), 2244 minutes. A config's
    train.accum_steps is the least the plan asks for."""
    plan = plan_with({**A100, "per_node": 4, "max_nodes": 1, "memory_gb": 40}, 4320)
    run = plan.training.run("meru_meru_vits")
    assert run.gpu_bytes(4) > 36 * 2**30 >= run.gpu_bytes(2, 4) and run.gpu_bytes(2, 2) > 36 * 2**30
    assert run.gpu_bytes(1, 8) == run.gpu_bytes(2, 4)
    flops = 6 * (12 * 12 * 384**2 * 197 + 2 * 12 * 197**2 * 384 + 12 * 12 * 512**2 * 77 + 2 * 12 * 77**2 * 512)
    flops *= 2048 * 120_000
    assert math.ceil(flops * 4 / 3 / (312e12 * 0.22) * 1.25 / 60) == 4488
    assert math.ceil(flops / (312e12 * 0.22) * 1.25 / 60) == 3366
    job = plan.training.job("meru_meru_vits")
    assert (job.gpus, job.accum_steps, job.runtime) == (2, 4, 2244)
    assert job.runtime == math.ceil(flops * 4 / 3 / (2 * 312e12 * 0.22) * 1.25 / 60)
    at_least = Plan({**plan.config, "train": {**plan.config["train"], "accum_steps": 16}})
    at_least = at_least.training.job("meru_meru_vits")
    assert (at_least.gpus, at_least.accum_steps) == (2, 16)
    assert plan_with(A100).training.job("meru_meru_vits").accum_steps == 1  # 8-GPU nodes: the papers' way


def test_on_fast_gpus_the_loader_processes_set_the_runtime():
    """MERU ViT-S/16 (2048, 120k steps) on nodes of 8 GPUs at 989 TFLOPS and 36% utilisation (an H100 or H200 as
    benchmarks/gpu measured ViT-B/16), worked by hand: 4 GPUs hold the batch; they compute it in F / (4 x 989 TFLOPS
    x 0.36) = 7,786 s, but full.yaml's 8 loader processes a rank, 7 beside the rank on its 8 cores, at 380 images/s
    each make its 2048 x 120k images in 23,098 s: the runtime asked for is theirs, times 1.25. Without loader
    processes the rank decodes between steps and both add up; with 4 cores a GPU, 3 processes."""
    fast = {**A100, "peak_tflops": 989, "utilisation": 0.36, "loader_images_per_s": 380}
    plan = plan_with(fast)
    run = plan.training.run("meru_meru_vits")
    flops = 6 * (12 * 12 * 384**2 * 197 + 2 * 12 * 197**2 * 384 + 12 * 12 * 512**2 * 77 + 2 * 12 * 77**2 * 512)
    computing = flops * 2048 * 120_000 / (4 * 989e12 * 0.36)
    loading = 2048 * 120_000 / (4 * 7 * 380)
    assert loader_seconds(run, 4, fast, 8) == pytest.approx(loading, rel=1e-12)
    assert round(loading) == 23_098 and round(computing) == 7_786
    job = plan.training.job("meru_meru_vits")
    assert job.gpus == 4 and job.runtime == math.ceil(loading * 1.25 / 60) == 482
    assert runtime_minutes(run, 4, fast, 1.25, workers=0) == math.ceil((computing + 7 * loading) * 1.25 / 60)
    assert loader_seconds(run, 4, {**fast, "cpus": 4}, 8) == pytest.approx(2048 * 120_000 / (4 * 3 * 380), rel=1e-12)
    assert runtime_minutes(run, 4, A100 | {"peak_tflops": 989, "utilisation": 0.36}, 1.25, workers=8) == \
        math.ceil(computing * 1.25 / 60)  # no loader rate given: FLOPs alone


def test_a_compositional_samples_box_crop_takes_the_loaders_box_crop_rate():
    """HyCoCLIP ViT-B/16 on GRIT encodes a whole image and a box crop a sample: its loader processes make each
    sample in 1/380 s + 1/1100 s, worked by hand for its 768 x 500k samples on 4 GPUs of 7 processes; with no box crop
    rate given, the crop costs a whole image's time (2 x 1/380 s); a pairs run (MERU) takes no box crop time."""
    gpu = {**A100, "loader_images_per_s": 380, "loader_box_crops_per_s": 1100}
    plan = plan_with(gpu)
    hyco, meru = plan.training.run("hyco_hycoclip_vitb_grit"), plan.training.run("meru_meru_vits")
    assert (hyco.batch_size, hyco.steps, hyco.encodings) == (768, 500_000, 2)
    assert loader_seconds(hyco, 4, gpu, 8) == pytest.approx(768 * 500_000 * (1 / 380 + 1 / 1100) / 28, rel=1e-12)
    no_crop_rate = {key: value for key, value in gpu.items() if key != "loader_box_crops_per_s"}
    assert loader_seconds(hyco, 4, no_crop_rate, 8) == pytest.approx(768 * 500_000 * 2 / 380 / 28, rel=1e-12)
    assert loader_seconds(meru, 4, gpu, 8) == loader_seconds(meru, 4, no_crop_rate, 8)


def test_on_full_yamls_a100_nodes_every_run_is_paced_by_its_gpus():
    """full.yaml's loader rate changes no run's request there: every planned run's loader processes make its images
    faster than its GPUs compute it."""
    plan = Plan(FULL)
    gpu = FULL["resources"]["gpu"]
    trained = [exp for exp in plan.experiments() if plan.trains(exp) and plan.runnable(exp)]
    assert len(trained) > 50
    for experiment in trained:
        run, job = plan.training.run(experiment), plan.training.job(experiment)
        computing = run.work(job.accum_steps) / (job.gpus * gpu["peak_tflops"] * 1e12 * gpu["utilisation"])
        assert loader_seconds(run, job.gpus, gpu, FULL["train"]["num_workers"]) < computing, experiment


def test_a_gpu_that_cannot_hold_one_sample_is_named():
    with pytest.raises(InputError, match="experiment 'meru_meru_vitl': a training run of 2048 samples a step does not "
                                         "fit on 1 GPUs of 4 GB even one sample a micro-batch"):
        plan_with({**A100, "per_node": 1, "max_nodes": 1, "memory_gb": 4}).training.job("meru_meru_vitl")
