"""The Snakemake DAG at a tiny setting: config checks and the planning of targets (the end-to-end run of the
real default config is tests/replication/test_smoke_regression.py).

Targets come before `--configfile`, whose argument list would otherwise swallow them.
"""

import os
import re
import shlex
import shutil

import yaml

from helpers import REPO
from helpers.workflow import snakemake, tiny_config
from hypvl.runtime.gpu_claim import try_claim


def test_the_workflow_follows_snakemake_conventions():
    """`snakemake --lint`: a log and a software environment on every rule, no hard-coded path parameters, helpers
    in common.smk."""
    run = snakemake("--lint")
    assert run.returncode == 0 and "Lints for" not in run.stdout + run.stderr, run.stdout[-3000:]


def test_config_typo_stops_the_workflow_before_any_job(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("train:\n  stpes: 3\n")
    run = snakemake("reports/table1.md", "-n", "--cores", "1", "--configfile", str(bad))
    assert run.returncode != 0
    assert "stpes" in run.stdout + run.stderr


def test_dry_run_plans_the_flagship_table(tmp_path):
    target = str(tmp_path / "reports" / "table1.md")
    run = snakemake(target, "-n", "-p", "--cores", "1", "--configfile", str(tiny_config(tmp_path)))
    assert run.returncode == 0, run.stderr[-2000:]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", run.stdout, flags=re.M))
    shells = re.findall(r"^Shell command: (.*)$", run.stdout + run.stderr, flags=re.M)
    # no GPU: no hypvl.runtime.gpu_claim
    assert len(shells) > 20 and all(shell.startswith("hypvl ") for shell in shells)
    # zero-shot classification runs inside each training job (config evaluate_with_training); the six released
    # checkpoints beside their rows are stood in for by six of those models, each written, imported and evaluated
    # by one job
    assert counts["train"] == "13" and counts["synthesize_evaluation"] == "1" and counts["import_standin"] == "6"
    assert "evaluate_zeroshot" not in counts and "import_weights" not in counts
    assert counts["synthesize_corpus"] == counts["ground"] == "2"  # GRIT and RedCaps


def test_the_linear_probe_plans_the_probe_step_for_every_set(tmp_path):
    """A linear-probe metric needs the smoke world's evaluation part and one `hypvl probe-splits` job per set, which
    cuts train and val from the set's sources as stand-ins (--scaled-source)."""
    target = str(tmp_path / "results" / "metrics" / "hyco_meru_vits_grit" / "linprobe_cifar10.json")
    run = snakemake(target, "-n", "-p", "--cores", "1", "--configfile", str(tiny_config(tmp_path)))
    assert run.returncode == 0, run.stderr[-2000:]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", run.stdout, flags=re.M))
    assert counts["probe_splits"] == "19" and counts["evaluate_linprobe"] == counts["synthesize_evaluation"] == "1"
    data = tmp_path / "data" / "eval"
    for name in ("clevr", "dtd"):
        command = (f"hypvl probe-splits {name} --source {data / 'probe_sources' / name} --dest "
                   f"{data / 'linear_probe' / name} --splits train val --scaled-source")
        assert command in run.stdout, run.stdout[-3000:]


def test_config_paths_reach_shell_commands_quoted(tmp_path):
    """Folders whose names hold a space and `$(...)` reach every shell command as single quoted words."""
    weird = tmp_path / "x $(touch PWNED) y"
    for folder in ("replication", "expected"):
        shutil.copytree(REPO / folder, weird / folder)
    config = tmp_path / "paths.yaml"
    config.write_text(yaml.safe_dump({f"{name}_dir": str(weird / name)
                                      for name in ("data", "results", "reports", "replication", "expected")}))
    run = snakemake(str(weird / "reports" / "table1.md"), "-n", "-p", "--cores", "1", "--configfile", str(config))
    assert run.returncode == 0, run.stderr[-2000:]
    commands = [line.removeprefix("Shell command: ") for line in (run.stdout + run.stderr).splitlines()
                if line.startswith("Shell command: ")]
    assert len(commands) > 10
    for command in commands:
        words = [word for word in shlex.split(command) if "$(" in word]
        assert words and all(str(weird) in word for word in words), command


def test_gpu_jobs_run_through_their_claim_on_a_machine_of_two_gpus(tmp_path):
    """Grounding asking for a GPU (resources.jobs.ground.gpu: 1), run by Snakemake on this machine as if it had GPUs
    0 and 1 (CUDA_VISIBLE_DEVICES, two jobs at once), GPU 0 held by another job: each job's command starts through
    hypvl.runtime.gpu_claim, whose line opens its log naming GPU 1 (the second waiting for it where they overlap), and
    grounds its corpus."""
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(yaml.safe_dump({"resources": {"jobs": {"ground": {"gpu": 1, "mem_mb": 2000, "runtime": 30}}}}))
    data = tmp_path / "data" / "train"
    targets = [str(data / f"{corpus}_grounded" / "grounding.json") for corpus in ("grit", "redcaps")]
    environment = {**os.environ, "CUDA_VISIBLE_DEVICES": "0,1", "TMPDIR": str(tmp_path)}
    environment.pop("SLURM_JOB_ID", None)
    other = try_claim(1, ["0"], tmp_path / f"hypvl-gpus-{os.getuid()}-machine")
    try:
        run = snakemake(*targets, "--cores", "2", "--resources", "gpu=2", "--configfile", str(tiny_config(tmp_path)),
                        str(gpu), env=environment)
    finally:
        os.close(other["0"])
    assert run.returncode == 0, run.stderr[-3000:]
    for corpus in ("grit", "redcaps"):
        log = (tmp_path / "results" / "logs" / "ground" / "train" / f"{corpus}_grounded.log").read_text()
        assert re.match(r"(hypvl\.runtime\.gpu_claim: waiting for 1 of GPUs 0,1: .*\n)?hypvl\.runtime\.gpu_claim: GPUs 1 "
                        r"of 0,1\n",
                        log), log[:300]
        assert (data / f"{corpus}_grounded" / "grounding.json").is_file()
