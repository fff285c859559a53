"""The trainer's step: its precision is real (encoders autocast, geometry and losses float32, fp16's loss scaler),
a compiled step trains as the eager one, the attention kernel asked for is the one that runs, and the config names the
key that replaced `train.amp`."""

import numpy as np
import pytest
import torch
from torch import nn
from torch.profiler import profile

from helpers.models import TINY, _batch, _model
from helpers.training import TRAIN_CFG, _shards
from hypvl.errors import InputError
from hypvl.train.optim import build_optimizer
from hypvl.train.step import Precision, TrainStep, batch_on_device, compile_encoders, precision_on
from hypvl.train.trainer import train

CPU = torch.device("cpu")


def _step(model, precision: Precision, accum_steps: int = 1, attention: str = "auto") -> TrainStep:
    """The trainer's step at a constant learning rate (the trainer's warm-up starts at 0, which would not move)."""
    optimizer = build_optimizer(model, 1e-3, 0.2, (0.9, 0.98))
    return TrainStep(model, optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0), precision,
                     CPU, accum_steps, attention=attention)


def _record_dtypes(model) -> dict[str, set]:
    """Hooks recording the dtypes of every Linear output inside the encoders and of the embeddings."""
    seen = {"encoder matmuls": set(), "embeddings": set()}
    for encoder in (model.visual, model.textual):
        for module in encoder.modules():
            if isinstance(module, nn.Linear):
                module.register_forward_hook(lambda mod, args, out: seen["encoder matmuls"].add(out.dtype))
    for name in ("embed_image", "embed_text"):
        embed = getattr(model, name)

        def recorded(feats, embed=embed):
            out = embed(feats)
            seen["embeddings"].add(out.dtype)
            return out

        setattr(model, name, recorded)  # an instance attribute: what the model's own loss calls
    return seen


@pytest.mark.parametrize("method", ["meru", "hycoclip"])
def test_bf16_runs_the_encoders_in_bfloat16_and_the_geometry_in_float32(method):
    losses = {}
    for name in ("fp32", "bf16"):
        model = _model(method)
        seen = _record_dtypes(model)
        terms = _step(model, precision_on(name, CPU))(_batch(boxes=method == "hycoclip"))
        expected = torch.bfloat16 if name == "bf16" else torch.float32
        assert seen == {"encoder matmuls": {expected}, "embeddings": {torch.float32}}  # hyperboloid points
        assert all(value.dtype == torch.float32 for value in terms.values())
        losses[name] = terms["loss"].item()
    # bfloat16 keeps 8 significant bits (relative rounding 2^-9 per value): the loss moves, by far less than 1%
    assert losses["bf16"] != losses["fp32"] and losses["bf16"] == pytest.approx(losses["fp32"], rel=1e-2)


def test_fp16_scales_the_loss_and_bf16_does_not():
    cuda = torch.device("cuda")
    assert (precision_on("fp16", cuda).dtype, precision_on("fp16", cuda).scaled) == (torch.float16, True)
    assert (precision_on("bf16", cuda).dtype, precision_on("bf16", cuda).scaled) == (torch.bfloat16, False)
    assert (precision_on("fp32", cuda).dtype, precision_on("fp32", cuda).scaled) == (None, False)
    # on the CPU fp16 runs in float32, as `amp: true` did; bf16 is bf16 everywhere
    assert precision_on("fp16", CPU) == Precision("fp32", "cpu") and precision_on("bf16", CPU).name == "bf16"
    grads = {}
    for precision in (Precision("fp16", "cpu"), Precision("bf16", "cpu")):  # fp16 as on a GPU: autocast + scaler
        model = _model("clip")
        model.logit_scale.register_hook(lambda grad, name=precision.name: grads.__setitem__(name, grad.item()))
        step = _step(model, precision)
        step(_batch())
        assert step.scaler.is_enabled() == (precision.name == "fp16")
    # the backward pass ran on the loss times the scaler's initial 2^16 in fp16, on the loss itself in bf16 (the two
    # gradients differ by the encoders' rounding only)
    assert grads["fp16"] / grads["bf16"] == pytest.approx(2.0**16, rel=0.05)


@pytest.mark.slow  # inductor compiles C++ kernels with gcc: about two minutes on 2 cores with a cold cache
def test_a_compiled_step_trains_as_the_eager_one():
    """torch.compile (inductor) of the encoders: the same losses over two steps, the second after an update, in 2
    micro-batches: their first pass, without gradients, compiles a graph of its own, and each micro-batch's pass with
    gradients the graph a step in one pass runs (one pass alone, a compile of half a minute more in CI, adds nothing).
    Inductor fuses and reorders float32 reductions (layer norms, softmax, matmul epilogues), so values differ by
    float32 rounding (2^-24 relative per operation) accumulated through the encoders and the loss (measured: 5e-7
    relative): 1e-5 is 20x that, and 100x below what a real change of the computation does (bf16, above: ~1e-3)."""
    losses = {}
    for compiled in (False, True):
        model = _model("meru")
        if compiled:
            compile_encoders(model)
        step = _step(model, precision_on("fp32", CPU), 2)
        losses[compiled] = [step(_batch())["loss"].item() for _ in range(2)]
    assert losses[True] == pytest.approx(losses[False], rel=1e-5)
    assert losses[False][1] != losses[False][0]  # the second step saw updated weights


@pytest.mark.parametrize("accum_steps", [1, 2])
def test_the_attention_kernel_asked_for_runs_and_trains_as_pytorchs_choice(accum_steps):
    """`train.attention`: on the CPU, `math` runs PyTorch's plain attention in place of its flash kernel (PyTorch's
    choice there, `auto`) in the forward and backward passes of both towers (the text tower's causal one too), in one
    pass and over micro-batches, and leaves the process's own kernel settings as they were. `flash` is PyTorch's CPU
    choice, so bitwise the same step; `math` the same up to float32 rounding (the kernels sum in other orders;
    measured: loss 1.4e-7 relative, every gradient together 1.2e-6 in norm; 1e-5 allowed, 100x below bf16's change)."""
    results = {}
    for attention in ("auto", "flash", "math"):
        model = _model("meru")
        with profile() as prof:
            loss = _step(model, precision_on("fp32", CPU), accum_steps, attention)(_batch())["loss"].item()
        ran = {event.key for event in prof.key_averages() if "scaled_dot_product" in event.key}
        results[attention] = loss, torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]), ran
    flash = {"aten::_scaled_dot_product_flash_attention_for_cpu",
             "aten::_scaled_dot_product_flash_attention_for_cpu_backward"}
    assert flash <= results["auto"][2] and flash <= results["flash"][2]
    assert "aten::_scaled_dot_product_attention_math" in results["math"][2] and not flash & results["math"][2]
    assert results["flash"][0] == results["auto"][0] and torch.equal(results["flash"][1], results["auto"][1])
    assert results["math"][0] == pytest.approx(results["auto"][0], rel=1e-5)
    assert (results["math"][1] - results["auto"][1]).norm() < 1e-5 * results["auto"][1].norm()
    assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.math_sdp_enabled()  # restored


def test_an_attention_kernel_the_device_lacks_or_a_typo_is_one_clear_error():
    for name, message in [("cudnn", "train.attention 'cudnn': no such kernel on the CPU"),
                          ("flashy", "train.attention 'flashy' is not one of auto, flash, cudnn, efficient, math")]:
        with pytest.raises(InputError, match=message):
            _step(_model("clip"), precision_on("fp32", CPU), attention=name)


def test_the_trainer_runs_the_attention_kernel_its_config_names(tmp_path):
    shards = _shards(tmp_path / "data", n=8)
    exp = {"id": "t", "method": "clip", "backbone": "vit_s16", "seed": 0}
    with profile() as prof:
        summary = train(exp, TINY, {**TRAIN_CFG, "attention": "math"}, shards, tmp_path / "out", progress=False)
    ran = {event.key for event in prof.key_averages()}
    assert summary["attention"] == "math" and "aten::_scaled_dot_product_attention_math" in ran
    assert not any("flash_attention" in name for name in ran)
    with pytest.raises(InputError, match="train.attention 'cudnn': no such kernel on the CPU"):
        train(exp, TINY, {**TRAIN_CFG, "attention": "cudnn"}, shards, tmp_path / "cudnn", progress=False)


def test_the_streams_uint8_pixels_train_as_the_unit_floats_they_stand_for():
    """The training stream sends pixels as uint8 (B, S, S, 3); the step makes them unit floats (B, 3, S, S) where it
    runs: numpy's float32 quotient by 255 bitwise, other keys untouched, and the step's losses and updated weights
    bitwise those of the same batch sent as floats."""
    generator = torch.Generator().manual_seed(0)
    pixels = {key: torch.randint(0, 256, (4, 16, 16, 3), dtype=torch.uint8, generator=generator)
              for key in ("images", "box_images")}
    tokens = _batch(boxes=True)["tokens"]
    floats = {key: torch.from_numpy(value.numpy().transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255))
              for key, value in pixels.items()}
    moved = batch_on_device({**pixels, "tokens": tokens, "mask": torch.ones(4, dtype=torch.uint8)}, CPU)
    assert all(torch.equal(moved[key], floats[key]) for key in pixels)
    assert moved["mask"].dtype == torch.uint8 and torch.equal(moved["tokens"], tokens)
    assert batch_on_device(floats, CPU)["images"] is floats["images"]
    trained = {}
    for name, images in (("pixels", pixels), ("floats", floats)):
        model = _model("hycoclip")
        terms = _step(model, Precision("fp32", "cpu"))({**images, "tokens": tokens, "box_tokens": tokens.flip(0)})
        trained[name] = terms["loss"], [p.detach().clone() for p in model.parameters()]
    assert torch.equal(trained["pixels"][0], trained["floats"][0])
    assert all(torch.equal(a, b) for a, b in zip(trained["pixels"][1], trained["floats"][1]))
