"""What a training run costs and the job that runs it: FLOPs, GPU memory, GPU count, host memory, runtime.

Pure arithmetic on the model config and the schedule (no torch), so the workflow sizes its jobs while planning.
- Parameters and FLOPs of a transformer tower: Kaplan et al. 2020 (Scaling Laws for Neural Language Models),
  Table 1: N = 12 * depth * width^2 non-embedding parameters; a forward pass costs 2N per token plus attention's
  two token-by-token products (scores and the weighted sum of values, 2 * 2 * tokens * width per token and layer,
  counted in full for a causal mask), a training step 3x that (forward + backward): PaLM's model FLOPs (Chowdhery
  et al. 2022, App. B: 6N + 12 * depth * width * tokens per token), against which utilisation is measured
  (attention: 4% of ViT-B/16's, 8% of ViT-S/16's, 2.5% of the 77-token text tower's). Embeddings are left out.
- Activation memory: Korthikanti et al. 2022 (Reducing Activation Recomputation in Large Transformer Models),
  Eq. 1: tokens * width * (34 + 5 * heads * tokens / width) bytes per sample and layer, in 16-bit activations
  (mixed precision), no recomputation.
- Model state: 16 bytes per parameter under mixed precision with AdamW (fp32 weights, gradients and two moments);
  every data-parallel rank holds all of it.
- Gradient accumulation (`train.accum_steps`, hypvl.train.accumulation): a rank keeps one micro-batch's activations
  (the cached features of the rest, a few KB a sample, are left out) and runs its encoders' forward pass once more
  per step (4 passes of 3; 2 of 1 with frozen encoders).
- Input: each rank's loader processes (`train.num_workers`, as many as the GPU's cores hold beside the rank's own)
  each decode and crop `loader_images_per_s` whole images, and `loader_box_crops_per_s` of the 224-px box crops a
  compositional sample adds (`resources.gpu`; benchmarks/train_input.py measures both); where
  they make the run's images more slowly than the GPUs compute, the runtime is theirs (with no loader processes,
  the rank decodes between steps: both add up).
The GPU model and the utilisation assumed for the runtime come from the config (`resources.gpu`). Calibrated on
MERU App. (CLIP ViT-S/16, 120k steps at batch 2048 in ~14 h on 8 V100), the runtime estimate brackets HyCoCLIP's
Sec. 4 figures (ViT-B/16 on 4 A100: CLIP 45 h, MERU 46 h, HyCoCLIP 73 h); tests/workflow/test_cost.py checks both.
"""

import math
from dataclasses import dataclass

from hypvl.errors import InputError

STATE_BYTES_PER_PARAM = 16
GiB = 2**30
USABLE_GPU_MEMORY = 0.9  # the rest: CUDA context, cuBLAS/cuDNN workspaces, allocator fragmentation
VOCAB_SIZE = 49408  # CLIP's byte-pair vocabulary (MERU configs: TransformerTextEncoder vocab_size)


@dataclass(frozen=True)
class Tower:
    """One transformer encoder: tokens per sample, width, depth, heads, and its embedding parameters."""

    tokens: int
    width: int
    depth: int
    heads: int
    embedding_params: int = 0

    @property
    def block_params(self) -> int:
        """Non-embedding parameters (Kaplan et al. 2020, Table 1)."""
        return 12 * self.depth * self.width**2

    @property
    def params(self) -> int:
        return self.block_params + self.embedding_params

    @property
    def forward_flops(self) -> int:
        """FLOPs of one sample's forward pass: the blocks' matrix products and attention's."""
        return 2 * self.block_params * self.tokens + 4 * self.depth * self.tokens**2 * self.width

    @property
    def activation_bytes(self) -> float:
        """Activations one sample keeps for the backward pass (Korthikanti et al. 2022, Eq. 1)."""
        per_layer = self.tokens * self.width * (34 + 5 * self.heads * self.tokens / self.width)
        return per_layer * self.depth


def model_towers(model: dict, backbone: str) -> tuple[Tower, Tower]:
    """The image tower of `backbone` and the text tower, as the config `model` section builds them."""
    vit, text = model["backbones"][backbone], model["text"]
    patches = (model["image_size"] // vit["patch"]) ** 2
    image = Tower(patches + 1, vit["width"], vit["depth"], vit["heads"],
                  3 * vit["patch"] ** 2 * vit["width"] + (patches + 1) * vit["width"])
    words = text["context_length"]
    return image, Tower(words, text["width"], text["layers"], text["heads"],
                        (text.get("vocab_size", VOCAB_SIZE) + words) * text["width"])


@dataclass(frozen=True)
class Run:
    """A training run: its towers, the global batch, encodings per sample (2 where a method also encodes a box
    image and text per sample), steps, and whether the encoders are frozen (forward only, nothing kept)."""

    towers: tuple[Tower, ...]
    batch_size: int
    steps: int
    encodings: int = 1
    frozen: bool = False

    @property
    def passes(self) -> int:
        """Forward-pass equivalents of a training step: forward and backward (3), or forward only when frozen."""
        return 1 if self.frozen else 3

    @property
    def flops(self) -> float:
        """FLOPs of the whole run (the model's: what utilisation is measured against)."""
        return self.passes * sum(t.forward_flops for t in self.towers) * self.encodings * self.batch_size * self.steps

    def work(self, accum_steps: int = 1) -> float:
        """FLOPs the GPUs compute for the run in `accum_steps` micro-batches: the model's, and with accumulation
        one more forward pass of the encoders (the cached features)."""
        return self.flops * (self.passes + (accum_steps > 1)) / self.passes

    def gpu_bytes(self, gpus: int, accum_steps: int = 1) -> float:
        """Peak memory of one of `gpus` data-parallel ranks: model state plus the activations of its share of the
        batch, or of one of its `accum_steps` micro-batches (frozen encoders: fp32 weights and one layer's
        activations at a time)."""
        samples = math.ceil(self.batch_size / (gpus * accum_steps)) * self.encodings
        if self.frozen:
            return sum(4 * t.params + samples * t.activation_bytes / t.depth for t in self.towers)
        return sum(STATE_BYTES_PER_PARAM * t.params + samples * t.activation_bytes for t in self.towers)


@dataclass(frozen=True)
class Job:
    """What one training job asks of the cluster: GPUs in all, nodes, host memory per node (MB), runtime
    (minutes), CPU cores per node, the runtime the run needs in all (minutes; more than `runtime` when the
    run continues from its checkpoint in further attempts), and the micro-batches of each rank's batch per step
    (`train.accum_steps`)."""

    gpus: int
    nodes: int
    mem_mb: int
    runtime: int
    threads: int
    needed: int
    accum_steps: int = 1

    @property
    def gpus_per_node(self) -> int:
        return self.gpus // self.nodes

    @property
    def attempts(self) -> int:
        """Jobs of `runtime` minutes the run needs, each resuming from the last one's checkpoint."""
        return math.ceil(self.needed / self.runtime)


def gpu_counts(batch_size: int, per_node: int, max_nodes: int) -> list[int]:
    """GPU counts a run may use, smallest first: powers of two that split the global batch evenly, up to one node,
    then whole nodes (`per_node` a power of two)."""
    counts, gpus = [], 1
    while gpus <= per_node * max_nodes:
        if batch_size % gpus == 0:
            counts.append(gpus)
        gpus *= 2
    return counts or [1]


def accumulations(rows: int) -> list[int]:
    """Micro-batch counts that split a rank's `rows` samples evenly, fewest first."""
    return [steps for steps in range(1, rows + 1) if rows % steps == 0]


def loader_seconds(run: Run, gpus: int, gpu: dict, workers: int) -> float:
    """Seconds the loader processes of `gpus` ranks take to make the images of `run`: `workers` a rank
    (`train.num_workers`; 0: the rank itself), at most as many as the GPU's cores (`cpus`) hold beside the rank's
    own, each making `loader_images_per_s` whole images of `gpu` and `loader_box_crops_per_s` box crops (where not
    given, box crops at the whole images' rate); 0 where the config gives no rate."""
    rate = gpu.get("loader_images_per_s")
    if not rate:
        return 0.0
    per_sample = 1 / rate + (run.encodings - 1) / gpu.get("loader_box_crops_per_s", rate)
    processes = max(1, min(workers, gpu["cpus"] - 1))
    return run.batch_size * run.steps * per_sample / (gpus * processes)


def runtime_minutes(run: Run, gpus: int, gpu: dict, margin: float, accum_steps: int = 1, workers: int = 1) -> int:
    """Minutes to ask for `run` on `gpus` of the config's GPUs (`resources.gpu`) in `accum_steps` micro-batches, with
    `workers` loader processes a rank: its FLOPs (`Run.work`) at the assumed utilisation of their peak, or the
    loader's time where that is longer (`loader_seconds`; added to it without loader processes), times `margin`."""
    computing = run.work(accum_steps) / (gpus * gpu["peak_tflops"] * 1e12 * gpu["utilisation"])
    loading = loader_seconds(run, gpus, gpu, workers)
    seconds = computing + loading if workers == 0 else max(computing, loading)
    return math.ceil(seconds * margin / 60)


def size_job(run: Run, gpu: dict, max_runtime: int, margin: float, accum_steps: int = 1, workers: int = 1) -> Job:
    """The job of `run` on the config's GPU nodes (`resources.gpu`), each rank's batch in `accum_steps`
    micro-batches or more (`train.accum_steps`; runtimes with the estimate times `margin`):
    1. the fewest GPUs that hold a rank's share in `accum_steps` micro-batches and finish within `max_runtime`
       minutes (the papers' hardware, where the GPUs allowed include it);
    2. else, where the GPUs allowed cannot hold the batch or only too few of them finish in time: the fewest GPUs
       that finish in time with the fewest micro-batches that fit (the papers' batch on fewer GPUs, for one more
       forward pass of the encoders per step);
    3. else the most GPUs allowed, with the fewest micro-batches that fit; the run continues from its checkpoint
       in further attempts.
    Runtimes are `runtime_minutes` with `workers` loader processes a rank (`train.num_workers`).
    InputError where not even one sample a micro-batch fits on a GPU."""
    usable = gpu["memory_gb"] * GiB * USABLE_GPU_MEMORY
    counts = gpu_counts(run.batch_size, gpu["per_node"], gpu["max_nodes"])

    def fewest(gpus: int) -> int | None:
        """The fewest micro-batches (at least `accum_steps`) whose activations fit on each of `gpus` GPUs."""
        return next((steps for steps in accumulations(run.batch_size // gpus)
                     if steps >= accum_steps and run.gpu_bytes(gpus, steps) <= usable), None)

    def minutes(gpus: int, steps: int) -> int:
        return runtime_minutes(run, gpus, gpu, margin, steps, workers)

    fitting = [(gpus, fewest(gpus)) for gpus in counts if fewest(gpus) is not None]
    plain = [choice for choice in fitting if choice[1] == accum_steps]
    if not fitting:
        raise InputError(f"a training run of {run.batch_size} samples a step does not fit on {counts[-1]} GPUs of "
                         f"{gpu['memory_gb']} GB even one sample a micro-batch (resources.gpu)")
    gpus, steps = next((choice for choice in plain + fitting if minutes(*choice) <= max_runtime), fitting[-1])
    nodes = math.ceil(gpus / gpu["per_node"])
    per_node = gpus // nodes
    return Job(gpus, nodes, per_node * gpu["mem_mb"], min(minutes(gpus, steps), max_runtime), per_node * gpu["cpus"],
               minutes(gpus, steps), steps)
