"""The workflow through a real scheduler: a one-host SLURM cluster of two nodes with accounting (cluster/up.sh, which
.ci/run starts as root), jobs submitted by Snakemake's SLURM executor plugin through workflows/profiles/slurm.

- the smoke flagship row: every job an sbatch job, its outputs those of the local run;
- a training job at its time limit: SLURM's SIGTERM, resume.pt, the next attempt resumes; the checkpoint bitwise an
  uninterrupted run's;
- a grounding job whose node is lost: the next job continues after its last shard; the shards the local grounding's;
- a pilot training (full-size encoders) over two nodes, one torchrun per node started by srun, equal to one node's;
- a cluster without accounting: the workflow says it asks squeue, and a job cancelled by `scancel` reruns.
Each test records the scheduler's job ids of its jobs (printed at the end of the test log).
Skipped where no cluster answers (`sinfo`).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from helpers import REPO

PROFILE = REPO / "workflows" / "profiles" / "slurm"
PILOT = [REPO / "workflows" / "config" / "full.yaml", REPO / "workflows" / "config" / "pilot.yaml"]
ROW = Path("rows") / "hycoclip" / "table1" / "grit_vits_clip.csv"
EXPERIMENT = "hyco_clip_vits_grit"


def _cluster_answers() -> bool:
    try:
        return shutil.which("sinfo") is not None and subprocess.run(
            ["sinfo", "-h"], capture_output=True, timeout=15).returncode == 0
    except subprocess.TimeoutExpired:
        return False


pytestmark = pytest.mark.skipif(not _cluster_answers(),
                                reason="no SLURM cluster answers here (`sudo bash cluster/up.sh` starts one; .ci/run does)")


def paths(folder: Path, **more) -> Path:
    """A config file putting data, results and reports under `folder`, with `more` settings."""
    path = folder / f"paths{len(list(folder.glob('paths*.yaml')))}.yaml"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"data_dir": str(folder / "data"), "results_dir": str(folder / "results"),
                                    "reports_dir": str(folder / "reports"), **more}))
    return path


def snakemake(*args: str, slurm: bool = True, wait: bool = True):
    """Snakemake from the checkout (through the SLURM profile, polling every 2 s, where `slurm`); the finished
    process, or the running one where not `wait`."""
    exe = Path(sys.executable).parent / "snakemake"
    command = [str(exe), *args]
    if slurm:
        command += ["--profile", str(PROFILE), "--latency-wait", "5", "--slurm-init-seconds-before-status-checks",
                    "1", "--seconds-between-status-checks", "2"]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if not wait:
        return process
    process.log = process.communicate(timeout=1500)[0]
    return process


def finished(process) -> str:
    """The log of a process `snakemake(..., wait=False)` started, once it ends."""
    process.log = process.communicate(timeout=1500)[0]
    return process.log


def slurm_jobs(log: str) -> dict[str, list[str]]:
    """Rule -> the SLURM job ids Snakemake submitted its jobs as, in order, from its log (each rule block names its
    Snakemake job id, a retry's too; a submission line maps that to the scheduler's)."""
    rule_of = {job: rule for rule, job in re.findall(r"^(?:local)?rule (\w+):\n(?:    .*\n)*?    jobid: (\d+)$", log,
                                                     re.M)}
    jobs: dict[str, list[str]] = {}
    for job, slurm_id in re.findall(r"^Job (\d+) has been submitted with SLURM jobid (\d+)", log, re.M):
        jobs.setdefault(rule_of[job], []).append(slurm_id)
    return jobs


def accounted(job_ids: list[str]) -> dict[str, tuple[str, str]]:
    """Job id -> (state, node list), as `sacct` records them."""
    shown = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "JobID,State,NodeList", "-j", ",".join(job_ids)],
                           capture_output=True, text=True, timeout=60)
    return {job: (state.split()[0], nodes) for job, state, nodes in
            (line.split("|") for line in shown.stdout.splitlines() if line)}


def say(record_property, test: str, jobs: dict[str, list[str]]) -> None:
    """The scheduler's job ids of a test's jobs, for the test log (CI's): recorded as the test's `slurm_jobs`
    property, which conftest's terminal summary prints (from pytest-xdist's workers too)."""
    ids = ", ".join(f"{rule} {' '.join(numbers)}" for rule, numbers in sorted(jobs.items()))
    record_property("slurm_jobs", f"{test}: {ids}")


def wait_for(condition, what: str, seconds: float = 600):
    """Poll `condition` until it returns something true; fail naming `what` after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.5)
    pytest.fail(f"waited {seconds} s for {what}")


def running(name_part: str) -> str | None:
    """The id of a running SLURM job whose comment or name holds `name_part` (the plugin names jobs by rule in
    their comment), else None."""
    shown = subprocess.run(["squeue", "-h", "-t", "R", "-o", "%i|%k|%j"], capture_output=True, text=True, timeout=30)
    for line in shown.stdout.splitlines():
        job, comment, name = line.split("|", 2)
        if name_part in comment or name_part in name:
            return job
    return None


def model_state(checkpoint: Path) -> dict:
    return torch.load(checkpoint, map_location="cpu", weights_only=True)["model"]


def same_state(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def flagship(tmp_path_factory):
    """The smoke flagship row through SLURM: (its folder, Snakemake's log, its jobs' states as sacct records them,
    read at once: a later test restarts the cluster, whose job ids then start again)."""
    folder = tmp_path_factory.mktemp("slurm_flagship")
    run = snakemake(str(folder / "results" / ROW), "--configfile", str(paths(folder)))
    assert run.returncode == 0, run.log[-4000:]
    return folder, run.log, accounted([job for ids in slurm_jobs(run.log).values() for job in ids])


def test_the_flagship_row_runs_as_sbatch_jobs_and_equals_the_local_run(flagship, smoke_run, record_property):
    folder, log, states = flagship
    jobs = slurm_jobs(log)
    say(record_property, "flagship row", jobs)
    planned = {rule for rule, _ in re.findall(r"^(\w+)\s+(\d+)$", log.split("Job stats:", 1)[1], re.M)} - {"total"}
    assert set(jobs) == planned and {"train", "ground", "compare_row"} <= planned  # every job an sbatch job
    assert {state for state, _ in states.values()} == {"COMPLETED"} and len(states) == sum(map(len, jobs.values()))
    fields = ["row", "column", "experiment", "task", "metric", "paper", "ours", "delta", "verdict", "checkpoint_sha256"]
    ours = _rows(folder / "results" / ROW, fields)
    theirs = [row for row in _rows(smoke_run / "tables" / "hycoclip" / "table1.csv", fields) if row[0] == ROW.stem]
    assert ours == theirs and len(ours) == 16
    assert same_state(model_state(folder / "results" / "models" / EXPERIMENT / "checkpoint.pt"),
                      model_state(smoke_run / "models" / EXPERIMENT / "checkpoint.pt"))


def _rows(path: Path, fields: list[str]) -> list[tuple]:
    import csv

    with open(path, newline="") as handle:
        return [tuple(row[f] for f in fields) for row in csv.DictReader(handle)]


def test_a_training_job_at_its_time_limit_saves_and_the_next_attempt_resumes(flagship, record_property):
    """The train job's first attempt asks for a minute and trains for longer (1500 steps, about 100 s on 2 quiet
    cores): SLURM's SIGTERM at the limit (checked every 30 s), resume.pt written, the job TIMEOUT; the train rule's
    next attempt (the profile's `retries`), given 15 minutes (`--set-resources` on the attempt, so that a loaded
    machine cannot cut it too), resumes from it and ends the schedule: its log holds every step once, the first
    attempt's up to where it stopped and the retry's after. That a run stopped by SIGTERM and started again ends
    bitwise equal to an uninterrupted one is tests/training/test_train_stopping.py's (a reference run of 1500 steps
    here cost CI about two minutes)."""
    folder, _, _ = flagship
    steps = 1500
    longer = {"train": {"steps_for": {EXPERIMENT: steps}}, "resources": {"jobs": {"train": {
        "gpu": 0, "mem_mb": 2000, "runtime": 1}}}}
    summary = folder / "results_cut" / "models" / EXPERIMENT / "train_summary.json"
    cut = paths(folder, **longer, results_dir=str(folder / "results_cut"))
    run = snakemake(str(summary), "--configfile", str(cut), "--set-resources", "train:runtime=1 if attempt == 1 else 15")
    assert run.returncode == 0, run.log[-4000:]
    jobs = slurm_jobs(run.log)
    say(record_property, "time limit", jobs)
    states = accounted(jobs["train"])
    assert [states[job][0] for job in jobs["train"]] == ["TIMEOUT", "COMPLETED"]
    result = json.loads(summary.read_text())
    assert 0 < result["resumed_at_step"] < steps and result["schedule"]["steps"] == steps
    logged = [int(line.split(",", 1)[0]) for line in (summary.parent / "train_log.csv").read_text().splitlines()[1:]]
    assert logged == list(range(steps))
    assert model_state(summary.parent / "checkpoint.pt").keys() == model_state(
        folder / "results" / "models" / EXPERIMENT / "checkpoint.pt").keys()


def test_a_grounding_whose_node_is_lost_continues_after_its_last_shard(flagship, smoke_run, record_property):
    """RedCaps grounded through SLURM; once its first shard is written, the node it runs on goes DOWN (SLURM ends the
    job); the next job, on the other node, continues after that shard (`resumed_at_shard`), nothing before it
    computed again; the shards are byte for byte the local grounding's."""
    folder, _, _ = flagship
    config = paths(folder)
    summary = folder / "data" / "train" / "redcaps_grounded" / "grounding.json"
    run = snakemake(str(summary), "--configfile", str(config), wait=False)
    try:
        job = wait_for(lambda: running("ground"), "the ground job to start")
        progress = folder / "data" / "train" / ".redcaps_grounded.partial" / "progress.json"
        wait_for(lambda: progress.exists() and json.loads(progress.read_text())["shards"], "the first shard", 300)
        [node] = {nodes for _, nodes in accounted([job]).values()}
        subprocess.run(["scontrol", "update", f"NodeName={node}", "State=DOWN", "Reason=hypvl test: a lost node"],
                       check=True, timeout=30)
        log = finished(run)
    finally:
        subprocess.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"], timeout=30)
    assert run.returncode == 0, log[-4000:]
    jobs = slurm_jobs(log)
    say(record_property, "lost node", jobs)
    states = accounted(jobs["ground"])
    assert [states[job][0] for job in jobs["ground"]] == ["NODE_FAIL", "COMPLETED"]
    assert states[jobs["ground"][1]][1] != node
    grounded = json.loads(summary.read_text())
    assert grounded["resumed_at_shard"] >= 1
    local = smoke_run.parent / "data" / "train" / "redcaps_grounded"
    for shard in grounded["shards"]:
        name = Path(shard).name
        assert (summary.parent / name).read_bytes() == (local / name).read_bytes(), name


def test_a_pilot_training_over_two_nodes_runs_a_torchrun_per_node_and_equals_one_nodes(tmp_path, record_property):
    """The pilot's full-size ViT-S/16 CLIP, sized by the cost model for two GPUs (a runtime estimate beyond
    `max_runtime` on one): on nodes of one GPU it is one SLURM job over both nodes, `srun` starting a torchrun on
    each (c10d rendezvous at the first node, two processes, gloo on the CPU); on a node of two GPUs, one torchrun
    of two processes. The two checkpoints are bitwise equal: the same two processes' run, wherever they are."""
    def sized(per_node: int) -> dict:
        return {"keep_checkpoints": True, "resources": {"max_runtime": 150, "gpu": {
            "per_node": per_node, "max_nodes": 2 // per_node, "utilisation": 1e-7, "cpus": 1, "mem_mb": 1000}}}

    mirror = {"mirror": str(tmp_path / "data" / "mirror"), "sources": str(tmp_path / "data" / "mirror" / "sources.yaml"),
              "weights": None}
    summary = Path("models") / EXPERIMENT / "train_summary.json"
    found = {}
    for nodes, per_node in ((2, 1), (1, 2)):
        results = tmp_path / f"results_{nodes}"
        config = paths(tmp_path, **sized(per_node), results_dir=str(results), fetch=mirror)
        run = snakemake(str(results / summary), "--configfile", *map(str, PILOT), str(config))
        assert run.returncode == 0, run.log[-4000:]
        jobs = slurm_jobs(run.log)
        say(record_property, f"pilot training on {nodes} node(s)", jobs)
        [train] = jobs["train"]
        steps = subprocess.run(["sacct", "-n", "-P", "-o", "JobID,NNodes,NTasks", "-j", train], capture_output=True,
                               text=True, timeout=60).stdout
        if nodes == 2:  # the srun step: a task (torchrun) on each node
            assert re.search(rf"^{train}\.0\|2\|2$", steps, re.M), steps
        trained = json.loads((results / summary).read_text())
        assert trained["processes"] == 2 and trained["schedule"]["steps"] == 2
        found[nodes] = model_state(results / "models" / EXPERIMENT / "checkpoint.pt")
    assert same_state(found[2], found[1])


def test_without_accounting_the_run_asks_squeue_and_a_cancelled_job_reruns(tmp_path, record_property):
    """A cluster that keeps no accounting (restarted so: HYPVL_SLURM_ACCOUNTING=none): sacct exists but knows no
    job, and the plugin would ask it for ever; the workflow says so and asks squeue. A job then cancelled with
    `scancel` while it runs is submitted again (the profile's `retries`) and its output made; the cluster is
    restarted with accounting after."""
    if os.geteuid() != 0:
        pytest.skip("restarting the cluster needs root")
    restart("none")
    try:
        corpus = tmp_path / "data" / "train" / "yfcc15m" / "corpus.json"
        run = snakemake(str(corpus), "--configfile", str(paths(tmp_path)), wait=False)
        job = wait_for(lambda: running("synthesize"), "the synthesize job to start")
        subprocess.run(["scancel", job], check=True, timeout=30)
        log = finished(run)
    finally:
        restart("slurmdbd")
    assert run.returncode == 0, log[-4000:]
    say(record_property, "without accounting", slurm_jobs(log))
    assert "hypvl: this SLURM cluster keeps no accounting" in log and "from squeue" in log
    [first, second] = slurm_jobs(log)["synthesize_corpus"]
    assert first == job and second != job and json.loads(corpus.read_text())


def restart(accounting: str) -> None:
    """The test cluster stopped and started again, with `accounting` (slurmdbd or none)."""
    env = {**os.environ, "HYPVL_SLURM_ACCOUNTING": accounting}
    subprocess.run(["bash", str(REPO / "cluster" / "down.sh")], check=True, timeout=120, env=env)
    started = subprocess.run(["bash", str(REPO / "cluster" / "up.sh")], capture_output=True, text=True, timeout=600,
                             env=env)
    assert started.returncode == 0, started.stderr[-2000:]
