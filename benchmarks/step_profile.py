"""Where a training step's time goes, for benchmarks/gpu's `--profile`: torch.profiler over a few steps, the
device's kernels (on the CPU: the operators' own time) summed by kind of work, as shares of the total.

The kinds are read off kernel and operator names, the first that matches (cuBLAS's Hopper kernels are named
nvjet_*, inductor's matmul templates triton_tem_*, its fused pointwise and reduction kernels triton_*).
"""

import re

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

KINDS = (  # (kind, pattern over the lower-cased name), first match wins
    ("matmul", r"^triton_tem"),
    ("fused (inductor)", r"^triton_"),
    ("attention", r"flash|fmha|attention|sdpa"),
    ("matmul", r"gemm|nvjet|cutlass|xmma|cublas|aten::(addmm|mm|bmm|matmul|linear|baddbmm)\b"),
    ("optimizer", r"adam|multi_tensor"),
    ("copy", r"memcpy|memset|aten::(copy_|to|_to_copy|clone|contiguous)\b"),
    ("normalisation", r"layer_norm|layernorm|softmax"),
)
OTHER = "other"


def kind_of(name: str) -> str:
    """The kind of work a kernel or operator named `name` does (OTHER where no pattern matches)."""
    lowered = name.lower()
    return next((kind for kind, pattern in KINDS if re.search(pattern, lowered)), OTHER)


def time_shares(step, batch: dict, steps: int = 2) -> dict:
    """{'profiled_s': device (CPU: operator) seconds per step, 'shares': {kind: fraction}, 'top': the 8 costliest
    kernels (operators) with their share} over `steps` steps of `step` (hypvl.train.step.TrainStep), after one
    unprofiled step."""
    cuda = step.device.type == "cuda"
    step(batch)
    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA] if cuda else [ProfilerActivity.CPU]
    with profile(activities=activities) as prof:
        for _ in range(steps):
            step(batch)
        if cuda:
            torch.cuda.synchronize(step.device)
    times: dict[str, float] = {}
    for event in prof.key_averages():
        on_device = event.device_type == DeviceType.CUDA
        own = event.self_device_time_total if cuda else event.self_cpu_time_total
        if own > 0 and on_device == cuda:
            times[event.key] = times.get(event.key, 0.0) + own
    total = sum(times.values()) or 1.0
    shares: dict[str, float] = {}
    for name, microseconds in times.items():
        kind = kind_of(name)
        shares[kind] = shares.get(kind, 0.0) + microseconds / total
    top = sorted(times.items(), key=lambda item: -item[1])[:8]
    return {"profiled_s": total / steps / 1e6, "shares": dict(sorted(shares.items(), key=lambda item: -item[1])),
            "top": [{"name": name[:120], "share": microseconds / total} for name, microseconds in top]}
