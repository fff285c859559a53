"""Data-parallel training on the CPU (gloo), the same code as NCCL on GPUs: two processes with half the global batch
each give the loss and the gradients of one process on the whole batch, for every method, with and without
activation checkpointing (in float64, so that the comparison sees the algorithm, not float32 summation order:
this tiny model's gradients reach a few hundred); and `hypvl train` runs unchanged under torchrun."""

import json
import subprocess
import sys

import pytest
import torch
import torch.multiprocessing as mp
import yaml

from helpers import REPO
from helpers.distributed import GLOBAL_BATCH, WORLD, _collate, _free_port, join_gloo
from helpers.models import TINY, _model
from helpers.train_stream import _shards
from hypvl.errors import InputError
from hypvl.provenance import file_digest
from hypvl.train import distributed
from hypvl.train.syntax import syntax_targets

METHODS = ("clip", "meru", "hycoclip", "poinclip", "syntax_meru")


def _samples(method: str) -> list[dict]:
    """The global batch as per-sample tensors; syntax MERU's captions have 2 to 9 words (ranks differ in words)."""
    generator = torch.Generator().manual_seed(3)
    samples = []
    for i in range(GLOBAL_BATCH):
        sample = {"images": torch.rand(3, 16, 16, generator=generator, dtype=torch.float64),
                  "tokens": torch.randint(1, 49000, (12,), generator=generator)}
        if method == "hycoclip":
            sample["box_images"] = torch.rand(3, 16, 16, generator=generator, dtype=torch.float64)
            sample["box_tokens"] = torch.randint(1, 49000, (12,), generator=generator)
        if method == "syntax_meru":
            words = 2 + i
            parse = {"tokens": ["w"] * words, "heads": [0, *range(words - 1)], "pos": ["NOUN"] * words}
            sample["syntax"] = syntax_targets(parse, [[w + 1] for w in range(words)], 12)
        samples.append(sample)
    return samples


def _step(model, batch) -> tuple[float, dict]:
    model.zero_grad(set_to_none=True)
    terms = model(batch)
    terms["loss"].backward()
    return terms["loss"].detach(), terms


def _rank(rank: int, port: int, out: str) -> None:
    ranks, device = join_gloo(rank, port, WORLD)
    try:
        results = {}
        for method in METHODS:
            samples = _samples(method)
            per_rank = GLOBAL_BATCH // WORLD
            local = _collate(samples[rank * per_rank:(rank + 1) * per_rank])
            for checkpointing in (False, True):
                model = _model(method).double()
                model.set_grad_checkpointing(checkpointing)
                parallel = distributed.data_parallel(model, ranks, device)
                for _ in range(2):  # a second step: DDP fails there if a parameter got no gradient in the first
                    loss, terms = _step(parallel, local)
                loss = distributed.average(ranks, loss)
                results[f"{method} {checkpointing}"] = {
                    "loss": loss, "grads": {name: p.grad for name, p in model.named_parameters() if p.grad is not None}}
        torch.save(results, f"{out}/rank{rank}.pt")
    finally:
        distributed.stop(ranks)


def test_two_gloo_processes_match_one_process_on_the_global_batch(tmp_path):
    mp.spawn(_rank, args=(_free_port(), str(tmp_path)), nprocs=WORLD, join=True)
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in range(WORLD)]
    for method in METHODS:
        model = _model(method).double()
        loss, _ = _step(model, _collate(_samples(method)))
        grads = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
        for checkpointing in (False, True):
            for got in (r[f"{method} {checkpointing}"] for r in ranks):
                assert abs(got["loss"].item() - loss.item()) <= 1e-5, (method, checkpointing)
                assert got["grads"].keys() == grads.keys()
                for name, grad in grads.items():
                    assert torch.allclose(got["grads"][name], grad, rtol=0, atol=1e-5), (method, checkpointing, name)


def test_ranks_come_from_torchruns_environment():
    assert distributed.from_environment({}) == distributed.Ranks()
    assert distributed.from_environment({"WORLD_SIZE": "4", "RANK": "2", "LOCAL_RANK": "0"}) == \
        distributed.Ranks(2, 4, 0)
    assert distributed.from_environment({"WORLD_SIZE": "4", "RANK": "3", "LOCAL_RANK": "1",
                                         "LOCAL_WORLD_SIZE": "2"}) == distributed.Ranks(3, 4, 1, 2)
    with pytest.raises(InputError, match="WORLD_SIZE is 2 but RANK is not set: start data-parallel training with torchrun"):
        distributed.from_environment({"WORLD_SIZE": "2", "LOCAL_RANK": "0"})
    with pytest.raises(InputError, match="RANK 2 is not below WORLD_SIZE 2"):
        distributed.from_environment({"WORLD_SIZE": "2", "RANK": "2", "LOCAL_RANK": "0"})


@pytest.mark.slow
def test_hypvl_train_runs_under_torchrun(tmp_path):
    """The contract with the workflow: `torchrun --nproc-per-node N -m hypvl.cli train ... :: ...` trains one model,
    written once, on the global batch split over the processes; the commands after `train` run on rank 0 only."""
    data = tmp_path / "data"
    _shards(data / "train", n=24, boxes=lambda i: 1 + i % 2)
    config = {"data_dir": str(data), "corpora": {"grit": "train"}, "cpu_code_path": "native",
              "model": {**TINY, "backbones": {"vit_s16": TINY["backbones"]["vit_s16"]}},
              "train": {"steps": 3, "batch_size_scale": 8 / 768, "checkpoint_every": 2, "shuffle_buffer": 4}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    out = tmp_path / "model"
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                          "--master-port", str(_free_port()), "-m", "hypvl.cli", "train",
                          "--spec", str(REPO / "replication" / "hycoclip.yaml"), "--experiment",
                          "hyco_hycoclip_vits_grit", "--configfile", str(tmp_path / "config.yaml"), "--out", str(out),
                          "--quiet", "::", "data", "check", "grounded", str(data / "train")],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.count("24 records") == 1  # the command after `train` runs once, on rank 0
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["processes"] == 2 and summary["schedule"]["batch_size"] == 8 and summary["samples_read"] >= 24
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint.pt", "checkpoint.pt.sha256.json", "tensorboard",
                                                          "train_log.csv", "train_summary.json"]
    record = json.loads((out / "checkpoint.pt.sha256.json").read_text())  # the final file's digest, by rank 0
    assert record["sha256"] == file_digest(out / "checkpoint.pt")
    assert len(list((out / "tensorboard").iterdir())) == 1  # one event file: rank 0 reports, the others do not


def _compressed_rank(rank: int, port: int, out: str) -> None:
    """One float32 CLIP step on this rank's half of the batch, its gradients all-reduced in float32 and in float16."""
    ranks, device = join_gloo(rank, port, WORLD)
    try:
        per_rank = GLOBAL_BATCH // WORLD
        local = {k: v.float() if v.is_floating_point() else v
                 for k, v in _collate(_samples("clip")[rank * per_rank:(rank + 1) * per_rank]).items()}
        own = _model("clip")  # this rank's own gradient (its loss sees the global batch), before any averaging
        _step(own, local)
        results = {"own": {n: p.grad for n, p in own.named_parameters() if p.grad is not None}}
        for compressed in (False, True):
            model = _model("clip")
            parallel = distributed.data_parallel(model, ranks, device, fp16_compression=compressed)
            _step(parallel, local)
            results[compressed] = {"hook": parallel._get_ddp_logging_data().get("comm_hook"),
                                   "grads": {n: p.grad for n, p in model.named_parameters() if p.grad is not None}}
        torch.save(results, f"{out}/rank{rank}.pt")
    finally:
        distributed.stop(ranks)


def test_fp16_compression_all_reduces_the_gradients_in_float16(tmp_path):
    """`train.ddp_fp16_compression` (MERU's and HyCoCLIP's `ddp_fp16_compression=True`): torch's fp16_compress_hook
    is registered, and the averaged gradients are float16 values within float16 rounding of the float32 average."""
    mp.spawn(_compressed_rank, args=(_free_port(), str(tmp_path)), nprocs=WORLD, join=True)
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in range(WORLD)]
    for got in ranks:
        assert got[True]["hook"] == "fp16_compress_hook" and got[False]["hook"] != "fp16_compress_hook"
        plain, compressed = got[False]["grads"], got[True]["grads"]
        assert plain.keys() == compressed.keys()
        flat = torch.cat([compressed[n].flatten() for n in plain])
        reference = torch.cat([plain[n].flatten() for n in plain])
        assert torch.equal(flat, flat.half().float())  # every averaged gradient is a float16 value
        assert not torch.equal(reference, reference.half().float())  # float32's are not: the check can fail
        # float16 rounding of each rank's gradient, then of their sum: half an ulp (2^-11, relative) of each, and
        # of float16's subnormal spacing where they are that small
        own = [torch.cat([r["own"][n].flatten() for n in plain]) for r in ranks]
        bound = 2.0 ** -11 * ((own[0].abs() + own[1].abs()) / 2 + flat.abs()) + 3 * 2.0 ** -25
        assert torch.allclose((own[0] + own[1]) / 2, reference, rtol=1e-5, atol=1e-6)
        assert torch.all((flat - reference).abs() <= bound * 1.01)
        assert not torch.equal(flat, reference)
    assert all(torch.equal(ranks[0][True]["grads"][n], ranks[1][True]["grads"][n]) for n in ranks[0][True]["grads"])
