"""What a device can compute at most, for benchmarks/gpu's model FLOPs utilisation: the datasheet's dense bf16 peak of
a known GPU, and the best rate of square matmuls measured on the device itself."""

import time

import torch

# dense (no sparsity) bf16 tensor-core peaks in TFLOP/s from NVIDIA's datasheets, by device name, first match
BF16_PEAKS = (("H200 NVL", 835), ("H200", 989), ("H100 NVL", 835), ("H100 PCIe", 756), ("H100", 989), ("A100", 312))


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def datasheet_peak(name: str) -> float | None:
    """TFLOP/s of `name`'s dense bf16 peak (None: not in the table)."""
    return next((peak for model, peak in BF16_PEAKS if model.lower() in name.lower()), None)


def measured_peak(device: torch.device) -> dict:
    """The best TFLOP/s of square matmuls: bf16 8192^3 on a GPU, float32 256^3 on the CPU; best of 5 rounds."""
    n, dtype = (8192, torch.bfloat16) if device.type == "cuda" else (256, torch.float32)
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    rounds, repeats = [], 10
    for _ in range(6):
        synchronize(device)
        start = time.perf_counter()
        for _ in range(repeats):
            a @ b
        synchronize(device)
        rounds.append(time.perf_counter() - start)
    return {"tflops": 2 * n**3 * repeats / min(rounds[1:]) / 1e12, "matmul": f"{n}^3", "dtype": str(dtype)[6:]}
