"""The CPU code path: with `cpu_code_path: avx2` a training run gives the same bits whichever vector
instructions the machine's torch would pick (AVX-512, AVX2, none), so the smoke pins hold on any x86-64 CPU
with AVX2; the workflow passes the setting to every training and evaluation job."""

import json
import os
import subprocess
import sys

import pytest
import torch
import yaml
from PIL import Image

from helpers import REPO
from helpers.models import TINY
from hypvl.data.formats.grounded import GroundedRecord, write_grounded_shards
from hypvl.data.formats.images import encode_image
from hypvl.workflow.steps import STEP_SECTIONS

AVX2 = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")
needs_avx2 = pytest.mark.skipif(not AVX2, reason="the CPU has no AVX2")


def _hypvl(args, env=None):
    return subprocess.run([sys.executable, "-m", "hypvl.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=REPO)


@needs_avx2
def test_a_hypvl_process_takes_the_configured_path_over_the_environment():
    probe = ("import sys; from hypvl.runtime.cpu import use_code_path; use_code_path(sys.argv[1]); import torch; "
             "print(torch.backends.cpu.get_cpu_capability())")
    machine = {**os.environ, "ATEN_CPU_CAPABILITY": "default"}
    run = [subprocess.run([sys.executable, "-c", probe, path], capture_output=True, text=True, env=machine)
           for path in ("avx2", "native")]
    assert [r.stdout.strip() for r in run] == ["AVX2", "DEFAULT"], [r.stderr for r in run]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A grounded corpus and a config with TINY models, for HyCoCLIP Table 1's MERU and HyCoCLIP."""
    tmp = tmp_path_factory.mktemp("cpu")
    records = [GroundedRecord(f"k{i:03d}", encode_image(Image.new("RGB", (24, 24), (i * 20, 40, 0))),
                              f"a red thing number {i}",
                              [(encode_image(Image.new("RGB", (24, 24), (0, i * 20, 0))), f"thing {i}")])
               for i in range(12)]
    write_grounded_shards(records, tmp / "data" / "corpus", shard_size=6)
    config = {"data_dir": str(tmp / "data"), "corpora": {"grit": "corpus"}, "model": TINY,
              "train": {"steps": 4, "batch_size_scale": 4 / 768, "shuffle_buffer": 8}}
    (tmp / "config.yaml").write_text(yaml.safe_dump(config))
    return tmp


def _train_both(tmp, name: str, code_path: str, machine: str) -> list[dict]:
    args = []
    for method in ("meru", "hycoclip"):
        args += ["::"] if args else []
        args += ["train", "--spec", "replication/hycoclip.yaml", "--experiment", f"hyco_{method}_vits_grit", "--quiet",
                 "--configfile", str(tmp / "config.yaml"), "--out", str(tmp / name / method),
                 "--config-json", json.dumps({"cpu_code_path": code_path})]
    run = _hypvl(args, {"ATEN_CPU_CAPABILITY": machine})
    assert run.returncode == 0, run.stderr[-2000:]
    return [torch.load(tmp / name / m / "checkpoint.pt", weights_only=True)["model"] for m in ("meru", "hycoclip")]


@needs_avx2
def test_meru_and_hycoclip_train_to_the_same_bits_on_every_vector_path(tiny_run):
    reference = _train_both(tiny_run, "avx512", "avx2", "avx512")
    for machine in ("avx2", "default"):
        for ours, theirs in zip(reference, _train_both(tiny_run, machine, "avx2", machine)):
            assert ours.keys() == theirs.keys()
            assert all(torch.equal(ours[k], theirs[k]) for k in ours), machine


def test_the_code_path_reaches_every_training_and_evaluation_job():
    assert all("cpu_code_path" in STEP_SECTIONS[step] for step in ("train", "evaluate"))
