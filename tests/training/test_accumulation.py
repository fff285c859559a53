"""Feature-cached gradient accumulation (`train.accum_steps`, hypvl.train.accumulation): a step over micro-batches
has the loss terms and every parameter gradient of one pass over the whole batch, for every method, alone and under
data parallelism (two gloo processes against one process on the global batch), under 16-bit autocast with the
fp16 loss scaler, and through the trainer; a model whose loss cannot be split is refused by name.

The comparisons run in float64, so that they see the algorithm and not float32 summation order: the two passes
differ only in the order of sums (a micro-batch's text encoder also trims padding to its own longest caption), each
rounding at 2^-53 = 1.1e-16 relative, through the tiny model's few hundred operations in sequence (measured: at most
4e-14 of each tensor's largest entry). 1e-9 is 25000x that, and a real fault moves values by far more than 1e-3
(a micro-batch's gradient lost: its share; the temperature's gradient counted once per micro-batch, as open_clip's
--accum-freq does: n-fold; a micro-batch's words misnumbered: other edges).
"""


import pytest
import torch
import torch.multiprocessing as mp
from torch import nn

from helpers.distributed import _collate, _free_port, join_gloo
from helpers.models import TINY, _model
from helpers.training import TRAIN_CFG, _shards
from hypvl.errors import InputError
from hypvl.outside.standins import standin_model
from hypvl.train import distributed
from hypvl.train.step import Precision, TrainStep
from hypvl.train.syntax import syntax_targets
from hypvl.train.trainer import train

METHODS = ("clip", "meru", "hycoclip", "poinclip", "syntax_meru")
BATCH, PARTS, WORLD, CONTEXT = 16, 4, 2, 12
EOT = 49407  # the largest id: where the text encoder takes its features
FP32 = Precision("fp32", "cpu")
REL = 1e-9  # see the module docstring


def _text(generator, length: int) -> torch.Tensor:
    tokens = torch.zeros(CONTEXT, dtype=torch.long)
    tokens[: length - 1] = torch.randint(1, 49000, (length - 1,), generator=generator)
    tokens[length - 1] = EOT
    return tokens


def _samples(method: str, dtype=torch.float64) -> list[dict]:
    """The global batch as per-sample tensors: captions of 3 to 11 tokens then padding, so that micro-batches trim
    the text encoder's input to other lengths than the whole batch; syntax MERU's captions have 1 to 5 words, and
    samples 4-7 none (a micro-batch without words)."""
    generator = torch.Generator().manual_seed(5)
    samples = []
    for i in range(BATCH):
        length = 3 + (i * 5) % 9
        sample = {"images": torch.rand(3, 16, 16, generator=generator, dtype=dtype),
                  "tokens": _text(generator, length)}
        if method == "hycoclip":
            sample["box_images"] = torch.rand(3, 16, 16, generator=generator, dtype=dtype)
            sample["box_tokens"] = _text(generator, 2 + i % 4)
        if method == "syntax_meru":
            words = 0 if 4 <= i < 8 else min(length - 2, 1 + i % 5)
            parse = {"tokens": ["w"] * words, "heads": [0, *range(words - 1)][:words], "pos": ["NOUN"] * words}
            sample["syntax"] = syntax_targets(parse, [[w + 1] for w in range(words)], CONTEXT)
        samples.append(sample)
    return samples


def _stepped(model, batch: dict, accum_steps: int, precision: Precision = FP32, parallel=None, steps: int = 1):
    """The trainer's step on `batch` at learning rate 0 (the weights stay, their gradients are kept): the loss terms
    of the last step and every parameter's gradient."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    step = TrainStep(model, optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0), precision,
                     torch.device("cpu"), accum_steps, parallel)
    for _ in range(steps):
        terms = step(batch)
    return ({name: value.detach() for name, value in terms.items()},
            {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None})


def _assert_close(got: dict, expected: dict, rel: float, what: str) -> None:
    """Every tensor of `got` equals `expected`'s within `rel` of the expected tensor's largest entry."""
    assert got.keys() == expected.keys(), what
    for name, value in expected.items():
        torch.testing.assert_close(got[name], value, rtol=rel, atol=rel * float(value.abs().max()),
                                   msg=lambda text, name=name: f"{what} {name}: {text}")


@pytest.mark.parametrize("method", METHODS)
def test_an_accumulated_step_has_the_loss_and_gradients_of_one_pass(method):
    batch = _collate(_samples(method))
    terms, grads = _stepped(_model(method).double(), batch, 1)
    accumulated, accumulated_grads = _stepped(_model(method).double(), batch, PARTS)
    _assert_close(accumulated, terms, REL, method)
    _assert_close(accumulated_grads, grads, REL, method)
    model = _model(method)
    # every trained parameter has its gradient, the learned scalars (temperature, curvature, scales) included
    assert accumulated_grads.keys() == {name for name, p in model.named_parameters() if p.requires_grad}
    assert all(accumulated_grads[name].abs().item() > 0 for name in model.scalar_names)


def _rank(rank: int, port: int, out: str) -> None:
    ranks, device = join_gloo(rank, port, WORLD)
    try:
        results = {}
        for method in METHODS:
            per_rank = BATCH // WORLD
            local = _collate(_samples(method)[rank * per_rank:(rank + 1) * per_rank])
            # a second step: DistributedDataParallel fails there if a parameter got no gradient in the first
            terms, grads = _stepped(_model(method).double(), local, PARTS,
                                    parallel=lambda module: distributed.data_parallel(module, ranks, device), steps=2)
            results[method] = {"terms": {name: distributed.average(ranks, value) for name, value in terms.items()},
                               "grads": grads}
        torch.save(results, f"{out}/rank{rank}.pt")
    finally:
        distributed.stop(ranks)


def test_two_gloo_processes_accumulating_match_one_process_in_one_pass(tmp_path):
    """Each of 2 processes holds 8 of the 16 samples and steps in 4 micro-batches of 2; the gradients all-reduced
    once per step are those of one process on the 16 in one pass, and so are the loss terms averaged over the
    ranks."""
    mp.spawn(_rank, args=(_free_port(), str(tmp_path)), nprocs=WORLD, join=True)
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in range(WORLD)]
    for method in METHODS:
        terms, grads = _stepped(_model(method).double(), _collate(_samples(method)), 1)
        for rank, got in enumerate(r[method] for r in ranks):
            _assert_close(got["terms"], terms, REL, f"{method} rank {rank}")
            _assert_close(got["grads"], grads, REL, f"{method} rank {rank}")


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler:UserWarning")  # the scaler skips steps
@pytest.mark.parametrize("name", ["fp16", "bf16"])
def test_under_16_bit_autocast_the_loss_is_scaled_once(name):
    """As on a GPU: the encoders autocast to 16 bits, and fp16 scales the loss by 2^16 (unscaled in the optimiser's
    step; 12 steps at learning rate 0 let the scaler back off from 2^16 to a scale at which no gradient overflows).
    Accumulated and one-pass gradients then agree to 16-bit rounding (a micro-batch's matmuls round otherwise;
    measured: 9e-4 of a tensor's largest entry in fp16, 5e-3 in bf16, whose 8-bit mantissa rounds at 2^-9), not to
    a factor: a loss scaled per micro-batch, or not at all, would be off 4x or 2^k."""
    batch = _collate(_samples("meru", torch.float32))
    precision = Precision(name, "cpu")
    terms, grads = _stepped(_model("meru"), batch, 1, precision, steps=12)
    accumulated, accumulated_grads = _stepped(_model("meru"), batch, PARTS, precision, steps=12)
    _assert_close(accumulated, terms, 1e-3, name)
    _assert_close(accumulated_grads, grads, 2e-2, name)


def _key_thirds(state: dict) -> dict:
    """The attention key biases (the middle third of each fused query-key-value bias) taken out of `state`."""
    keys = {}
    for name in [n for n in state if n.endswith(("attn.qkv.bias", "attn.in_proj_bias"))]:
        query, key, value = state[name].chunk(3)
        state[name], keys[name] = torch.cat([query, value]), key
    return keys


def test_the_trainer_accumulating_writes_the_checkpoint_of_one_pass(tmp_path):
    """Three steps of HyCoCLIP on the smoke data (batch 4): in 2 micro-batches of 2, the weights and the log of one
    pass, to float32 rounding (measured: 1e-7 of each tensor's largest entry). Except the attention's key biases:
    softmax ignores them, so their gradient is zero up to rounding, which AdamW divides by its own magnitude
    (plus eps 1e-8): there any two summation orders give updates that differ by up to the learning rate (5e-4;
    measured 5e-4 in the text tower, 7e-6 in the image tower). They are held to that bound."""
    shards = _shards(tmp_path / "data")
    exp = {"id": "t", "method": "hycoclip", "backbone": "vit_s16", "seed": 0}
    one = train(exp, TINY, TRAIN_CFG, shards, tmp_path / "one", progress=False)
    two = train(exp, TINY, {**TRAIN_CFG, "accum_steps": 2}, shards, tmp_path / "two", progress=False)
    a, b = (torch.load(tmp_path / run / "checkpoint.pt", weights_only=True)["model"] for run in ("one", "two"))
    keys_a, keys_b = _key_thirds(a), _key_thirds(b)
    _assert_close(b, a, 1e-5, "checkpoint")
    steps = TRAIN_CFG["steps"] - 1  # the first trains at learning rate 0
    assert all((keys_b[name] - keys_a[name]).abs().max() <= steps * TRAIN_CFG["lr"] for name in keys_a)
    assert two["final"] == pytest.approx(one["final"], rel=1e-5)
    assert two["samples_read"] == one["samples_read"]


def test_a_loss_that_cannot_be_split_is_refused_by_name(tmp_path):
    step = lambda model, parts=2: _stepped(model, {}, parts)  # noqa: E731  (refused before any batch)
    with pytest.raises(InputError, match="train.accum_steps 2: TransformersModel's loss cannot be split"):
        step(standin_model("clip", TINY, "vit_s16"))
    dropping = _model("meru")
    dropping.visual.vit.pos_drop = nn.Dropout(0.1)
    with pytest.raises(InputError, match=r"MERU has batch norm or dropout \(visual.vit.pos_drop\)"):
        step(dropping)
    with pytest.raises(InputError, match="train.accum_steps 3 does not split a process's batch of 4 samples"):
        _stepped(_model("clip").double(), _collate(_samples("clip")[:4]), 3)
    with pytest.raises(InputError, match=r"batch size 4 does not split over 1 process\(es\) in 3 micro-batch"):
        train({"id": "t", "method": "clip", "backbone": "vit_s16"}, TINY, {**TRAIN_CFG, "accum_steps": 3},
              _shards(tmp_path), tmp_path / "out", progress=False)
