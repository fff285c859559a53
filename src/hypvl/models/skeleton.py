"""Models built without their random initialisation, for a checkpoint about to replace it.

Building a ViT-L/16 model draws its 430M parameters at random (6 s on one CPU thread) only for the checkpoint to
overwrite them, in every evaluation job. Inside `parameters_on_meta` each parameter a module registers is moved to
PyTorch's meta device (a shape, no storage), so every initialiser that touches it afterwards costs nothing; buffers
stay real (the non-persistent ones, a causal attention mask or position ids, are computed by the constructors and are
in no checkpoint). `load_state(..., assign=True)` then puts the checkpoint's tensors in the parameters' place.
PyTorch has the meta device but no parameters-only mode; accelerate's `init_empty_weights(include_buffers=False)` is
this function, and accelerate is no dependency of ours (one context manager does not warrant it).
"""

from contextlib import contextmanager

import torch


@contextmanager
def parameters_on_meta():
    """Within it, every parameter a module registers lives on the meta device."""
    register = torch.nn.Module.register_parameter

    def register_on_meta(module, name, param):
        register(module, name, param)
        if param is not None and not param.is_meta:  # one already on meta is shared (tied): kept as it is
            module._parameters[name] = torch.nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)

    torch.nn.Module.register_parameter = register_on_meta
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = register


def skeleton(build):
    """The model `build()` returns, built inside `parameters_on_meta`; None where it cannot be built so: its build
    moves the model to a device (open_clip's `create_model`, which meta parameters refuse), or a parameter is
    registered under two names (tied weights, which assigning a checkpoint's tensors by name would untie). The
    caller then builds it the ordinary way, which raises whatever error the build has."""
    try:
        with parameters_on_meta():
            model = build()
    except Exception:  # any failure here is the ordinary build's to report
        return None
    tied = len(list(model.named_parameters(remove_duplicate=False))) != len(list(model.parameters()))
    return None if tied else model
