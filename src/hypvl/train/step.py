"""One training step, as the trainer runs it and benchmarks/gpu times it: the batch to the device, the learned
scalars clamped, forward and loss under the run's precision, backward (loss-scaled in fp16), the optimiser and the
learning-rate schedule stepped; in one pass, or over micro-batches (`train.accum_steps`, `hypvl.train.accumulation`).
Also the precision itself (`train.precision`), compiling the encoders (`train.compile`) and the attention kernel
they try first (`train.attention`).

Precision: `fp16` autocasts the encoders to float16 and scales the loss (torch.amp.GradScaler), as MERU trains
(Sec. 4, mixed precision); `bf16` autocasts them to bfloat16, whose float32 exponent range needs no scaler; `fp32`
does neither. Geometry and losses compute in float32 under either (`hypvl.geometry.precision.full_precision`).
On the CPU, `fp16` runs in float32 (as `amp: true` did before): most CPUs have no fast float16 matmuls and need no
scaler; `bf16` autocasts there too.

Attention: `auto` leaves the choice of scaled-dot-product attention kernel to PyTorch (cuDNN's, on an H200 with
torch 2.11, as benchmarks/gpu's profile showed); `flash`, `cudnn`, `efficient` or `math` runs that kernel on every
attention it can take and, on one it cannot, the memory-efficient kernel, else the plain (math) one (the text tower
attends with the causal flag, not a mask tensor, so flash takes it: `hypvl.models.encoders`). The same function up
to float rounding; which is fastest at a step's shapes is for benchmarks/gpu to measure.
"""

from contextlib import nullcontext
from dataclasses import dataclass

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from hypvl.data.transforms import to_unit_float
from hypvl.errors import InputError

from .accumulation import Replay, accumulate, check_accumulable

# train.precision -> the encoders' autocast dtype (None: float32, no autocast)
AUTOCAST_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": None}
# train.attention -> the attention kernel tried first (auto: PyTorch's own order), and those tried after it
ATTENTION_KERNELS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                     "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}
FALLBACK_KERNELS = (SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH)
CPU_ATTENTION = ("auto", "flash", "math")  # PyTorch's CPU build has no cuDNN or memory-efficient attention
PIXELS = ("images", "box_images")  # a batch's images: unit floats (B, 3, S, S), or the stream's uint8 (B, S, S, 3)


@dataclass(frozen=True)
class Precision:
    """What a step computes in on a device type: `name` (fp16, bf16 or fp32) with its autocast dtype, and whether
    the loss is scaled (fp16 only)."""

    name: str
    device_type: str

    @property
    def dtype(self) -> torch.dtype | None:
        return AUTOCAST_DTYPES[self.name]

    @property
    def scaled(self) -> bool:
        return self.name == "fp16"

    def autocast(self) -> torch.autocast:
        """The context the forward pass and loss run in (disabled for fp32)."""
        return torch.autocast(self.device_type, dtype=self.dtype, enabled=self.dtype is not None)

    def scaler(self) -> torch.amp.GradScaler:
        """The loss scaler of a run (a no-op unless fp16)."""
        return torch.amp.GradScaler(self.device_type, enabled=self.scaled)


def precision_on(name: str, device: torch.device) -> Precision:
    """The precision `train.precision: name` runs in on `device`: as named, except fp16 on the CPU, which runs in
    fp32 (see the module docstring)."""
    if name not in AUTOCAST_DTYPES:
        raise InputError(f"train.precision {name!r} is not one of {', '.join(AUTOCAST_DTYPES)}")
    device = torch.device(device)
    return Precision("fp32" if name == "fp16" and device.type == "cpu" else name, device.type)


def attention_kernels(name: str, device: torch.device) -> list[SDPBackend] | None:
    """The attention kernels a step enables for `train.attention: name` on `device`, in the order tried: `name`'s,
    then the fallbacks (None for `auto`: PyTorch's own kernels and order). Only these are enabled: the CPU tries its
    two in a fixed order (flash, math) whatever the priority, so `math` there has to be the only one."""
    known = ("auto", *ATTENTION_KERNELS)
    if name not in known:
        raise InputError(f"train.attention {name!r} is not one of {', '.join(known)}")
    if torch.device(device).type == "cpu" and name not in CPU_ATTENTION:
        raise InputError(f"train.attention {name!r}: no such kernel on the CPU (there: {', '.join(CPU_ATTENTION)})")
    if name == "auto":
        return None
    first = ATTENTION_KERNELS[name]
    return [first, *(kernel for kernel in FALLBACK_KERNELS if kernel != first)]


def compile_encoders(model, backend: str = "inductor", mode: str | None = None) -> None:
    """torch.compile the image and text encoders of `model` in place (their parameters and state-dict keys stay
    as they are), in inductor's `mode` (None: its default); projections, geometry and losses stay eager."""
    model.visual.compile(backend=backend, mode=mode)
    model.textual.compile(backend=backend, mode=mode)


class TrainStep:
    """The trainer's step for `model` under `precision`, with its loss scaler (`scaler`, saved in resume checkpoints),
    over `accum_steps` micro-batches of each batch (`hypvl.train.accumulation`; 1: one pass), with `attention`'s
    kernel tried first (`train.attention`). `parallel` wraps the module whose forward pass the step runs
    (`step_model`: the model, or its accumulation's `Replay`) for data parallelism (DistributedDataParallel under
    torchrun); None leaves it as it is."""

    def __init__(self, model, optimizer, scheduler, precision: Precision, device: torch.device, accum_steps: int = 1,
                 parallel=None, attention: str = "auto"):
        self.model, self.optimizer, self.scheduler = model, optimizer, scheduler
        self.precision, self.device, self.accum_steps = precision, device, accum_steps
        self.attention_kernels = attention_kernels(attention, device)
        if accum_steps > 1:
            check_accumulable(model, accum_steps)
        module = model if accum_steps == 1 else Replay(model)
        self.step_model = parallel(module) if parallel else module
        self.scaler = precision.scaler()

    def __call__(self, batch: dict) -> dict[str, torch.Tensor]:
        """Train on `batch` (tensors on any device); returns the loss terms (with their graphs in one pass)."""
        self.model.clamp_scalars()
        batch = batch_on_device(batch, self.device)
        kernels = self.attention_kernels
        with nullcontext() if kernels is None else sdpa_kernel(kernels, set_priority=True):
            if self.accum_steps == 1:
                with self.precision.autocast():  # geometry and losses stay float32 inside
                    terms = self.step_model(batch)
                self.optimizer.zero_grad(set_to_none=True)
                self.scaler.scale(terms["loss"]).backward()
            else:
                self.optimizer.zero_grad(set_to_none=True)
                terms = accumulate(self.model, self.step_model, batch, self.accum_steps, self.precision,
                                   self.scaler)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.scheduler.step()
        return terms


def batch_on_device(batch: dict, device: torch.device) -> dict[str, torch.Tensor]:
    """`batch` on `device`, its uint8 pixels made unit floats there (bitwise as on the CPU: `to_unit_float`). The
    training stream sends pixels as uint8, a quarter of float32's bytes through the loader's shared memory, the
    pinning and the copy to the GPU (which the step's kernels wait for)."""
    moved = {key: value.to(device, non_blocking=True) for key, value in batch.items()}
    return {key: to_unit_float(value) if key in PIXELS and value.dtype == torch.uint8 else value
            for key, value in moved.items()}
