"""The workflow at paper scale through the cluster profiles, planned offline (dry runs): what each training job asks
of SLURM (read back through the SLURM executor plugin's own submit command), the torchrun launch, and the data
acquisition jobs in front of grounding and evaluation.

Targets come before `--configfile`, whose argument list would otherwise swallow them.
"""

import os
import re

import pytest
import yaml
from snakemake_executor_plugin_slurm.submit_string import get_submit_command
from snakemake_executor_plugin_slurm.utils import set_gres_string

from helpers.cluster import FULL, dry_run, job_of, jobs
from hypvl.config import load_config
from hypvl.acquire.manifest import load_sources
from hypvl.errors import InputError
from hypvl.workflow import Plan


class Resources(dict):
    """A job's resources as the SLURM plugin reads them (`.get` and attributes)."""

    def __getattr__(self, name):
        return self.get(name)


def sbatch(job: dict, threads: int) -> str:
    """The sbatch command the SLURM executor plugin builds for a planned job (as its executor does: the submit
    command, then the GPU request)."""
    resources = Resources({k: int(v) if v.isdigit() else v for k, v in job["resources"].items()})
    fake = type("Job", (), {"resources": resources, "threads": threads})()
    params = {"run_uuid": "run", "slurm_logfile": "log", "comment_str": "c", "account": "", "partition": "",
              "workdir": ""}
    return get_submit_command(fake, params) + set_gres_string(fake)


@pytest.fixture(scope="module")
def slurm_plan(tmp_path_factory):
    """The SLURM profile's dry run of every table at paper scale (the brief's command), planned once."""
    tmp = tmp_path_factory.mktemp("slurm")
    return tmp, jobs(dry_run(tmp, "{tmp}/reports/index.md", "--profile", "workflows/profiles/slurm",
                             "--cores", "all"))


def test_slurm_profile_plans_every_table_at_paper_scale(slurm_plan):
    """The plugin is installed and the profile validates: every table is planned, with acquisitions first."""
    _, planned = slurm_plan
    rules = {job["rule"] for job in planned}
    assert {"acquire", "ground", "train", "evaluate_zeroshot", "compare", "report", "claims", "index"} <= rules


def test_a_vit_l_meru_training_job_asks_slurm_for_one_node_of_8_gpus(slurm_plan):
    """What tests/workflow/test_cost.py derives by hand reaches SLURM: 8 GPUs on 1 node, 64 cores, 512 GB, 3602 minutes,
    and the job runs torchrun with 8 processes of 8 threads."""
    _, planned = slurm_plan
    job = job_of(planned, "train", "experiment=meru_meru_vitl")
    command = sbatch(job, threads=2)
    for flag in ("--gpus=8", "--nodes=1", "--mem 512000", "-t 3602", "--cpus-per-task=64"):
        assert flag in command, command
    assert "--ntasks-per-gpu" not in command  # one task: torchrun starts the processes
    assert job["shell"].startswith("python -m hypvl.runtime.gpu_claim 8 -- torchrun --standalone --nproc-per-node 8 "
                                   "-m hypvl.cli train --threads 8 ")
    assert "--experiment meru_meru_vitl" in job["shell"]


def test_a_model_is_evaluated_and_reported_before_further_training_and_paper_scale_keeps_every_checkpoint(slurm_plan):
    """Every other job outranks every job making a model (a model's evaluations, compares and reports come as soon
    as it exists; the pilot, whose checkpoints are temp() files, holds few at a time), importing and fine-tuning
    outrank training, acquisitions outrank all, and full.yaml keeps each model's checkpoint."""
    _, planned = slurm_plan
    making = ("train", "import_weights", "finetune")
    trainings = [job["priority"] for job in planned if job["rule"] == "train"]
    made = [job["priority"] for job in planned if job["rule"] in making[1:]]
    others = {job["rule"]: job["priority"] for job in planned if job["rule"] not in making}
    assert trainings and len(made) > 30 and {"evaluate_zeroshot", "compare", "report", "index"} <= set(others)
    assert min(others.values()) > max(made) and min(made) > max(trainings)
    assert min(job["priority"] for job in planned if job["rule"] == "acquire") >= max(others.values())
    assert load_config([FULL])["keep_checkpoints"] is True


def test_evaluation_and_grounding_wait_for_their_acquisitions(slurm_plan):
    """Missing data is fetched (or named) by the acquisition jobs before any job reads it."""
    tmp, planned = slurm_plan
    acquired = tmp / "data" / "acquired"
    hierarchy = job_of(planned, "evaluate_hierarchy", "experiment=hyco_hycoclip_vitb_grit")
    assert f"{acquired}/imagenet.json" in hierarchy["input"] and f"{acquired}/wordnet_isa.json" in hierarchy["input"]
    assert "--gpus=1" in sbatch(hierarchy, threads=8)
    ground = job_of(planned, "ground", "grounded=train/grit_grounded")
    assert ground["input"] == f"{acquired}/grit.json"
    fetch = job_of(planned, "acquire", "dataset=coco_val2017")
    assert fetch["shell"].startswith(f"hypvl acquire coco_val2017 --dest {tmp}/data/eval/coco --ready ")
    assert f"{tmp}/data/eval/coco/annotations/captions_val2017.json" in fetch["shell"]
    assert f"--out {acquired}/coco_val2017.json" in fetch["shell"]


def test_a_corpus_whose_boxes_no_model_reads_is_grounded_without_a_detector_or_gpu(slurm_plan):
    """YFCC15M trains CLIP alone (MERU Table 5): its grounding runs no detector (`--no-boxes`) and asks SLURM for no
    GPU; RedCaps, whose boxes HyCoCLIP reads, gets the detector on a GPU of its own."""
    _, planned = slurm_plan
    yfcc = job_of(planned, "ground", "grounded=train/yfcc15m_grounded")
    redcaps = job_of(planned, "ground", "grounded=train/redcaps_grounded")
    cores = min(8, os.cpu_count())  # threads_per_job, at most the cores of this dry run (`--cores all`)
    assert yfcc["threads"] == redcaps["threads"] == cores  # the job's cores cut its crops
    assert yfcc["shell"].startswith(f"hypvl ground --corpus yfcc15m --no-boxes --threads {cores} --config-json ")
    assert "gpu" not in yfcc["resources"] and "--gpus" not in sbatch(yfcc, threads=8)
    assert " ".join(redcaps["shell"].split()).startswith(
        f"python -m hypvl.runtime.gpu_claim 1 -- hypvl ground --corpus redcaps --threads {cores} --config-json ")
    assert redcaps["resources"]["gpu"] == "1" and "--gpus=1" in sbatch(redcaps, threads=8)
    plan = Plan(load_config([FULL]))
    assert {corpus: plan.data.takes_boxes(corpus) for corpus in plan.config["grounding"]["raw"]} == {
        "grit": True, "redcaps": True, "cc3m": True, "yfcc15m": False}


def test_the_linear_probe_waits_for_its_splits_cut_from_the_users_sources_on_cpu_jobs(slurm_plan):
    """Each probe set's train/val are cut by one job with no GPU, from the sources as they are (not stand-ins)."""
    tmp, planned = slurm_plan
    data = tmp / "data" / "eval"
    assert len([job for job in planned if job["rule"] == "probe_splits"]) == 19
    cut = job_of(planned, "probe_splits", "name=eurosat")
    assert cut["shell"].startswith(f"hypvl probe-splits eurosat --source {data}/probe_sources/eurosat --dest "
                                   f"{data}/linear_probe/eurosat --splits train val ")
    assert "--scaled-source" not in cut["shell"] and "--gpus" not in sbatch(cut, threads=1)
    probe = job_of(planned, "evaluate_linprobe", "experiment=meru_meru_vits")
    assert f"{data}/linear_probe/eurosat" in probe["input"]


def test_a_run_over_two_nodes_is_one_slurm_job_with_a_torchrun_per_node(tmp_path):
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump({"resources": {"gpu": {"per_node": 4}}}))
    planned = jobs(dry_run(tmp_path, "{tmp}/results/rows/meru/table2/vitl_meru.csv", "--profile",
                           "workflows/profiles/slurm", "--cores", "all", configs=[nodes]))
    job = job_of(planned, "train", "experiment=meru_meru_vitl")
    command = sbatch(job, threads=2)
    for flag in ("--nodes=2", "--ntasks=2", "--gres=gpu:4", "--cpus-per-task=32", "--mem 256000"):
        assert flag in command, command
    assert "--ntasks-per-gpu" not in command and "--gpus=" not in command
    # no hypvl.runtime.gpu_claim over several nodes: SLURM gives each node's GPUs
    assert job["shell"].startswith("srun --nodes 2 --ntasks-per-node 1 --kill-on-bad-exit=1 torchrun --nnodes 2 "
                                   "--nproc-per-node 4 --rdzv-backend c10d ")


def test_local_profile_runs_each_gpu_job_on_gpus_of_its_own(tmp_path):
    """On one machine each GPU job starts through hypvl.runtime.gpu_claim with the GPUs it asks Snakemake for, a
    profile's set-resources included: torchrun on 8 for ViT-L MERU, 1 for its evaluation, 2 for grounding where set
    so."""
    planned = jobs(dry_run(tmp_path, "{tmp}/results/rows/meru/table2/vitl_meru.csv", "--profile",
                           "workflows/profiles/local", "--set-resources", "ground:gpu=2"))
    train = job_of(planned, "train", "experiment=meru_meru_vitl")
    assert train["resources"]["gpu"] == "8"
    assert train["shell"].startswith("python -m hypvl.runtime.gpu_claim 8 -- torchrun --standalone --nproc-per-node 8 ")
    evaluation = job_of(planned, "evaluate_zeroshot", "experiment=meru_meru_vitl")
    assert evaluation["shell"].startswith("python -m hypvl.runtime.gpu_claim 1 -- hypvl evaluate zeroshot ")
    [ground] = [job for job in planned if job["rule"] == "ground"]
    assert ground["resources"]["gpu"] == "2"
    assert ground["shell"].startswith("python -m hypvl.runtime.gpu_claim 2 -- hypvl ")
    cpu_jobs = [job for job in planned if not job["resources"].get("gpu")]
    assert len(cpu_jobs) > 20 and all(job["shell"].startswith("hypvl ") for job in cpu_jobs)


def test_every_path_a_paper_scale_step_reads_is_acquired():
    """full.yaml places datasets of the manifest only, and every evaluation group's data and every raw training
    corpus lies in the folder of one acquisition (whose job then checks that it is there)."""
    plan = Plan(load_config([FULL]))
    assert set(plan.config["acquire"]) <= set(load_sources())
    needed = {path for group in plan.groups for path in plan.data.group_data(group)}
    needed |= {plan.data.raw_corpus_path(corpus) for corpus in plan.config["grounding"]["raw"]}
    assert len(needed) > 30
    for path in needed:
        assert len(plan.data.acquisitions([path])) == 1, path
    ready = {path for dataset in plan.config["acquire"] for path in plan.data.acquisition_ready(dataset)}
    assert ready == needed


def test_a_corpus_grounds_in_jobs_of_a_day_each_continuing_after_the_last(tmp_path):
    """full.yaml: a grounding job asks for a day (most clusters' limit) and the ground rule retries up to 8 jobs in
    all (hypvl.grounding.resume continues each after the last one's last shard); one job by default; `attempts`
    belongs to grounding alone."""
    assert Plan(load_config([FULL])).data.ground_retries() == 7
    assert Plan(load_config([FULL])).step_resources("ground") == {"gpu": 1, "mem_mb": 64000, "runtime": 1440}
    assert Plan(load_config()).data.ground_retries() is None
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(yaml.safe_dump({"resources": {"jobs": {"evaluate": {"gpu": 1, "mem_mb": 1, "runtime": 1,
                                                                          "attempts": 2}}}}))
    with pytest.raises(InputError, match="attempts"):
        load_config([FULL, wrong])


def test_gpu_training_evaluates_in_its_own_jobs():
    with pytest.raises(InputError, match="evaluate_with_training must be empty where training runs on GPUs"):
        Plan(load_config([FULL]) | {"evaluate_with_training": ["zeroshot"]})


def test_a_lab_with_one_node_of_4_gpus_trains_the_papers_batch_in_micro_batches(tmp_path):
    """What tests/workflow/test_cost.py derives by hand for MERU ViT-L/16 on 4 A100s reaches the job: torchrun with 4
    processes, and the config it trains with splits each process's 512 samples into 2 micro-batches."""
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump({"resources": {"gpu": {"per_node": 4, "max_nodes": 1}}}))
    planned = jobs(dry_run(tmp_path, "{tmp}/results/rows/meru/table2/vitl_meru.csv", "--profile",
                           "workflows/profiles/slurm", "--cores", "all", configs=[lab]))
    job = job_of(planned, "train", "experiment=meru_meru_vitl")
    assert "--gpus=4" in sbatch(job, threads=2) and "-t 4320" in sbatch(job, threads=2)
    assert job["shell"].startswith("python -m hypvl.runtime.gpu_claim 4 -- torchrun --standalone --nproc-per-node 4 "
                                   "-m hypvl.cli train ")
    assert '"accum_steps": 2' in job["shell"] and '"batch_size_scale": 1.0' in job["shell"]


def test_a_profiles_settings_for_an_evaluation_group_reach_its_part_rules(tmp_path):
    """set-resources and set-threads name rules; a part rule (HierarCaps' CLIP-B read on CIFAR-10 alone:
    evaluate_zeroshot_part<n>) takes its group's, and a part's own still win. The SLURM command carries them."""
    metric = "{tmp}/results/metrics/hcaps_clip_b/zs_cifar10.json"
    group = ("--set-threads", "evaluate_zeroshot=3", "--set-resources", "evaluate_zeroshot:slurm_partition=gpu",
             "evaluate_zeroshot:mem_mb=12345")
    output = dry_run(tmp_path, metric, *group, "--cores", "8")
    [job] = [job for job in jobs(output) if job["rule"].startswith("evaluate_zeroshot_part")]
    assert job["resources"]["slurm_partition"] == "gpu" and job["resources"]["mem_mb"] == "12345"
    assert "--mem 12345 --cpus-per-task=3" in sbatch(job, threads=3)
    assert re.search(rf"rule {job['rule']}:\n(    .*\n)*    threads: 3\n", output)
    own = jobs(dry_run(tmp_path, metric, *group, f"{job['rule']}:mem_mb=999", "--cores", "8"))
    assert job_of(own, job["rule"], job["wildcards"])["resources"]["mem_mb"] == "999"
    plain = jobs(dry_run(tmp_path, metric, "--cores", "8"))
    assert "slurm_partition" not in job_of(plain, job["rule"], job["wildcards"])["resources"]
