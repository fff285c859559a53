"""Feature-cached gradient accumulation (`train.accum_steps`): the loss and the gradients of the whole batch with
the activations of one micro-batch in memory (GradCache, Gao et al. 2021; open_clip's `--accum-freq` is a variant).

A method splits its loss in two (`DualEncoder.features`, `loss_of`): the encoders map the batch's `encoded_fields`
(a row per sample) to features (a row per sample, or per word), and the loss reads the features of the whole
batch (contrastive negatives, entailment and compositional terms). A step over n micro-batches:
1. encodes each micro-batch without gradients: the batch's features are theirs concatenated (this process's share
   of the global batch; the loss gathers the other processes' as it does without accumulation);
2. computes the loss once, on those features, and its gradient with respect to them and to the parameters the
   loss reads itself (temperature, curvature, the scale factors where the loss lifts features);
3. encodes each micro-batch again, with gradients, and back-propagates its rows of the feature gradient (the
   last one also the loss's own parameter gradients), through `Replay`, which DistributedDataParallel wraps: its
   gradients are all-reduced once, after the last micro-batch (`no_sync` on the others).
By the chain rule the parameters get the gradient of the whole batch's loss; open_clip instead computes the loss
once per micro-batch, which gives the learned temperature n times its gradient. The values differ from one pass's
by float rounding only: the text encoder trims padding to each micro-batch's longest text, and sums run in
another order. The cost: one more forward pass of the encoders per step (compiled encoders, `train.compile`,
compile a graph for each pass).

The features must not depend on the rest of the batch or on chance: batch norm, or dropout in training, would
make them differ between the two passes and from one pass over the whole batch. Our models have neither (timm's
ViT and open_clip's text transformer without dropout or drop path); `check_accumulable` refuses a model that has.
"""

from contextlib import nullcontext

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from hypvl.errors import InputError


def chance_or_batch_modules(model: nn.Module) -> list[str]:
    """Names of the modules of `model` whose output depends on chance (dropout or drop path with a rate above 0)
    or on the other samples of the batch (batch norm)."""
    return [name for name, module in model.named_modules()
            if isinstance(module, nn.modules.batchnorm._BatchNorm)
            or (isinstance(module, nn.modules.dropout._DropoutNd) and module.p > 0)
            or (isinstance(module, nn.MultiheadAttention) and module.dropout > 0)
            or getattr(module, "drop_prob", 0) > 0]  # timm's DropPath


def check_accumulable(model: nn.Module, steps: int) -> None:
    """InputError naming the model's method when `model` cannot train in `steps` micro-batches of a step."""
    method = type(model).__name__
    if getattr(model, "encoded_fields", None) is None:
        raise InputError(f"train.accum_steps {steps}: {method}'s loss cannot be split into micro-batches (its "
                         "encoders' features may depend on the rest of the batch or on chance, and it declares no "
                         "per-sample encoded_fields): train it with accum_steps 1")
    found = chance_or_batch_modules(model)
    if found:
        raise InputError(f"train.accum_steps {steps}: {method} has batch norm or dropout ({', '.join(found[:3])}), "
                         "which would make a micro-batch's features differ from the whole batch's: train it with "
                         "accum_steps 1")


def micro_batches(batch: dict, fields: tuple[str, ...], parts: int) -> list[dict]:
    """`batch`'s `fields` (a row per sample) cut into `parts` micro-batches of consecutive rows."""
    rows = len(batch[fields[0]])
    if rows % parts:
        raise InputError(f"train.accum_steps {parts} does not split a process's batch of {rows} samples evenly")
    size = rows // parts
    return [{field: batch[field][i * size:(i + 1) * size] for field in fields} for i in range(parts)]


class Replay(nn.Module):
    """Step 3's forward pass, a module so that DistributedDataParallel wraps it: `model`'s features of a
    micro-batch dotted with their gradients, plus the parameters dotted with gradients given for them; its
    backward pass gives each parameter its part of the whole batch's gradient."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, micro: dict, feature_grads: dict, parameter_grads: dict) -> torch.Tensor:
        features = self.model.features(micro)
        total = sum(_dot(features[key], grad) for key, grad in feature_grads.items())
        parameters = dict(self.model.named_parameters())
        return total + sum((parameters[name] * grad).sum() for name, grad in parameter_grads.items())


def _dot(values: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """sum(values * grad), at least in float32 (16-bit features' sum could overflow); its gradient is `grad`."""
    dtype = torch.promote_types(values.dtype, torch.float32)
    return (values.to(dtype) * grad.to(dtype)).sum()


def accumulate(model: nn.Module, replay: nn.Module, batch: dict, parts: int, precision, scaler) -> dict:
    """Gradients of `model`'s loss on `batch` accumulated into its parameters over `parts` micro-batches (steps 1-3
    above), the loss scaled by `scaler` (fp16) and the encoders run under `precision`'s autocast; `replay` is
    `Replay(model)`, wrapped for data parallelism or not. Returns the batch's loss terms (detached)."""
    micro = micro_batches(batch, model.encoded_fields, parts)
    with torch.no_grad(), precision.autocast():
        cached = [model.features(part) for part in micro]
    features = {key: torch.cat([part[key] for part in cached]).requires_grad_() for key in cached[0]}
    parameters = {name: p for name, p in model.named_parameters() if p.requires_grad}
    with precision.autocast():  # geometry and losses stay float32 inside
        terms = model.loss_of(features, batch)
    grads = torch.autograd.grad(scaler.scale(terms["loss"]), [*features.values(), *parameters.values()],
                                allow_unused=True)
    feature_grads = {key: grad.split([len(part[key]) for part in cached])
                     for key, grad in zip(features, grads) if grad is not None}
    parameter_grads = {name: grad for name, grad in zip(parameters, grads[len(features):]) if grad is not None}
    for i, part in enumerate(micro):
        last = i == parts - 1
        deferred = replay.no_sync() if isinstance(replay, DistributedDataParallel) and not last else nullcontext()
        with deferred:
            with precision.autocast():
                surrogate = replay(part, {key: grad[i] for key, grad in feature_grads.items()},
                                   parameter_grads if last else {})
            surrogate.backward()
    return {name: value.detach() for name, value in terms.items()}
