"""Devices: picking one, and evaluating on an accelerator with the encoders on the device, the rest on the CPU.

`on_device(model, device)` returns the model itself for the CPU. For another device it returns an
`OnDevice` view: its encoder methods (`ENCODERS`) run a replica of the model on the device, taking CPU
tensors and returning CPU tensors; every other attribute (similarity, exponential maps, curvature, scalar
parameters) is the CPU model's. The forward passes, which dominate evaluation, get the accelerator, and
the scoring and metric code sees CPU tensors at every scale.
"""

import copy
import os

import torch

ENCODERS = ("image_features", "text_features", "trunk_features", "encode_image", "encode_text")


def select_device(name: str) -> torch.device:
    """`auto`: the GPU where there is one, else the CPU; or `cpu` / `cuda` as named."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def use_threads(threads: int) -> int:
    """Set torch's CPU threads to `threads`, at most the cores this process may run on (a job sized for a GPU node's
    cores, run on a smaller machine, would oversubscribe it); returns the count set."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1  # Linux; macOS
    count = max(1, min(threads, cores))
    torch.set_num_threads(count)
    return count


class OnDevice:
    """A model whose encoders run on `device` (see the module docstring)."""

    def __init__(self, model: torch.nn.Module, device: torch.device):
        self.model, self.device = model, torch.device(device)
        self.replica = copy.deepcopy(model).to(self.device).eval()

    def __getattr__(self, name: str):
        if name not in ENCODERS:
            return getattr(self.model, name)
        encode = getattr(self.replica, name)

        def on_device(inputs: torch.Tensor) -> torch.Tensor:
            return encode(inputs.to(self.device, non_blocking=True)).float().cpu()

        return on_device


def device_encoder(model, name: str):
    """(encode, device): `model`'s encoder `name` taking and returning tensors on the device where it runs (an
    `OnDevice` view's replica, else the model itself on the CPU), and that device. A pipeline that leaves each batch's
    result there and fetches the results once at the end keeps the device busy while it prepares the next batch."""
    if isinstance(model, OnDevice):
        return getattr(model.replica, name), model.device
    return getattr(model, name), torch.device("cpu")


def on_device(model: torch.nn.Module, device: torch.device):
    """The model itself on the CPU, else an `OnDevice` view with its encoders on `device`."""
    return model if torch.device(device).type == "cpu" else OnDevice(model, device)
