"""What a library's weight files hold, checked before the library loads them: open_clip and transformers cast
whatever the file holds into the model's floating point parameters (`copy_`), so int8 or boolean weights would load
without a word. The dtypes are read from safetensors headers, or from a PyTorch file memory-mapped (no copy)."""

from pathlib import Path

import torch

from hypvl.errors import InputError, listed

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


def file_dtypes(folder: Path) -> dict[str, str]:
    """key -> dtype name of every tensor in the weight files of `folder` (e.g. `F32`, `I8`, `BOOL` from a
    safetensors header; `torch.int8` from a PyTorch file)."""
    dtypes = {}
    for path in sorted(p for p in Path(folder).iterdir() if p.suffix in WEIGHT_SUFFIXES and p.is_file()):
        if path.suffix == ".safetensors":
            from safetensors import safe_open

            with safe_open(str(path), framework="pt") as handle:
                dtypes.update({key: handle.get_slice(key).get_dtype() for key in handle.keys()})
            continue
        try:
            state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except Exception:  # noqa: BLE001 (not a state dict: the library says what it is when it loads it)
            continue
        if isinstance(state, dict):
            dtypes.update({key: str(value.dtype) for key, value in state.items() if isinstance(value, torch.Tensor)})
    return dtypes


def is_floating(dtype: str) -> bool:
    """True for a floating point dtype name of either notation (F16, BF16, F8_E4M3, torch.float32...)."""
    return dtype.upper().startswith(("F", "BF")) or "float" in dtype


def check_library_weights(folder: Path, model: torch.nn.Module, source: str) -> None:
    """InputError naming `source`, `folder` and the keys (a few, and a count of the rest) where the weight files hold
    a tensor of integer or boolean type that `model` (as the library built it) holds as floating point, or where the
    loaded parameters hold a number that is not finite."""
    own = model.state_dict()
    integral = [f"{key} ({dtype})" for key, dtype in file_dtypes(folder).items()
                if key in own and own[key].is_floating_point() and not is_floating(dtype)]
    if integral:
        raise InputError(f"{source}: {folder} holds weights of integer or boolean type where the model has floating "
                         f"point ones: {listed(integral)}; refused (quantised or corrupt weights are not this model's)")
    broken = [name for name, param in model.named_parameters() if not torch.isfinite(param).all()]
    if broken:
        raise InputError(f"{source}: {folder} holds weights that are not finite (NaN or infinity): {listed(broken)}")
