"""What a training run costs and the job that runs it: FLOPs, GPU memory, GPU count, host memory, runtime.

Pure arithmetic on the model config and the schedule (no torch), so the workflow sizes its jobs while planning.
- Parameters and FLOPs of a transformer tower: Kaplan et al. 2020 (Scaling Laws for Neural Language Models),
  Table 1: N = 12 * depth * width^2 non-embedding parameters; a forward pass costs 2N per token, a training step
  3x that (forward + backward); the attention-context term (2 * depth * tokens * width, 2% for ViT-B/16) is left
  out.
- Activation memory: Korthikanti et al. 2022 (Reducing Activation Recomputation in Large Transformer Models),
  Eq. 1: tokens * width * (34 + 5 * heads * tokens / width) bytes per sample and layer, in 16-bit activations
  (mixed precision), no recomputation.
- Model state: 16 bytes per parameter under mixed precision with AdamW (fp32 weights, gradients and two moments);
  every data-parallel rank holds all of it.
The GPU model and the utilisation assumed for the runtime come from the config (`resources.gpu`). Calibrated on
MERU App. (CLIP ViT-S/16, 120k steps at batch 2048 in ~14 h on 8 V100), the runtime estimate brackets HyCoCLIP's
Sec. 4 figures (ViT-B/16 on 4 A100: CLIP 45 h, MERU 46 h, HyCoCLIP 73 h); tests/test_cost.py checks both.
"""

import math
from dataclasses import dataclass

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
        """FLOPs of one sample's forward pass."""
        return 2 * self.block_params * self.tokens

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
    def flops(self) -> float:
        """FLOPs of the whole run."""
        passes = 1 if self.frozen else 3
        return passes * sum(t.forward_flops for t in self.towers) * self.encodings * self.batch_size * self.steps

    def gpu_bytes(self, gpus: int) -> float:
        """Peak memory of one of `gpus` data-parallel ranks: model state plus its share of the batch's
        activations (frozen encoders: fp32 weights and one layer's activations at a time)."""
        samples = math.ceil(self.batch_size / gpus) * self.encodings
        if self.frozen:
            return sum(4 * t.params + samples * t.activation_bytes / t.depth for t in self.towers)
        return sum(STATE_BYTES_PER_PARAM * t.params + samples * t.activation_bytes for t in self.towers)


@dataclass(frozen=True)
class Job:
    """What one training job asks of the cluster: GPUs in all, nodes, host memory per node (MB), runtime
    (minutes), CPU cores per node, and the runtime the run needs in all (minutes; more than `runtime` when the
    run continues from its checkpoint in further attempts)."""

    gpus: int
    nodes: int
    mem_mb: int
    runtime: int
    threads: int
    needed: int

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


def runtime_minutes(run: Run, gpus: int, gpu: dict, margin: float) -> int:
    """Minutes to ask for `run` on `gpus` of the config's GPUs (`resources.gpu`): its FLOPs at the assumed
    utilisation of their peak, times `margin`."""
    seconds = run.flops / (gpus * gpu["peak_tflops"] * 1e12 * gpu["utilisation"])
    return math.ceil(seconds * margin / 60)


def size_job(run: Run, gpu: dict, max_runtime: int, margin: float) -> Job:
    """The job of `run` on the config's GPU nodes (`resources.gpu`): the fewest GPUs that hold a rank's share of
    the batch and finish within `max_runtime` minutes (with the runtime estimate times `margin`); where no count
    does both, the most GPUs allowed (the trainer then accumulates gradients, and a run longer than `max_runtime`
    continues from its checkpoint in the next attempt)."""
    usable = gpu["memory_gb"] * GiB * USABLE_GPU_MEMORY
    counts = gpu_counts(run.batch_size, gpu["per_node"], gpu["max_nodes"])

    def minutes(gpus: int) -> int:
        return runtime_minutes(run, gpus, gpu, margin)

    gpus = next((g for g in counts if run.gpu_bytes(g) <= usable and minutes(g) <= max_runtime), counts[-1])
    nodes = math.ceil(gpus / gpu["per_node"])
    per_node = gpus // nodes
    return Job(gpus, nodes, per_node * gpu["mem_mb"], min(minutes(gpus), max_runtime), per_node * gpu["cpus"],
               minutes(gpus))
