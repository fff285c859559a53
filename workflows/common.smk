# Shared by the workflow files: the plan of this config (hypvl.workflow.Plan answers which files a target
# needs; each rule file asks its stage, PLAN.data, PLAN.training, PLAN.outside, PLAN.evaluation or PLAN.reports),
# the folders, and the software each step runs (the `hypvl` command of this package).
import os
import re
import shlex
import sys
from pathlib import Path

from hypvl.io import refuse_future_dated
from hypvl.workflow import Plan
from hypvl.workflow.reports import FLAGSHIP

PLAN = Plan(config)
SCALE = config["scale"]
DATA = config["data_dir"]
RESULTS = config["results_dir"]
REPORTS = config["reports_dir"]
THREADS = config["threads_per_job"]
ENV = "envs/hypvl.yaml"  # the one conda environment every rule runs in (`--sdm conda`), the project at its own path


def run_settings(wildcards, threads):
    """The training and fine-tuning jobs' param of the run settings (hypvl.workflow.steps, STEP_SECTIONS): a
    function of the job's threads, so that Snakemake leaves it out of the params whose change reruns a job."""
    return PLAN.step_config("run_settings")


def gpu_claim(wildcards, resources):
    """The start of a job's command that gives it GPUs of its own on a machine (hypvl.runtime.gpu_claim): as many as
    the job asks for (its `gpu` resource, a profile's set-resources included); none for a CPU job or a job over several
    nodes (SLURM gives each node's). A function of the job's resources, so that Snakemake reruns no job for it."""
    gpus = resources.get("gpu")
    return f"python -m hypvl.runtime.gpu_claim {int(gpus)} -- " if gpus else ""


def inherit_rule_settings(part, group_rule):
    """Give rule `part` (evaluate_<group>_part<n>) the set-resources and set-threads (a profile's, the command line's)
    of rule `group_rule`, under any of its own. Snakemake keys them by rule name and has no hook for a family of rules,
    so they are applied here as it applies a rule's own when it defines the rule (snakemake.workflow). Names are as
    the workflow has them (a module's `use rule * from hypvl as hypvl_*` renames them; one it leaves out is skipped)."""
    from snakemake.resources import Resource, Resources

    group_rule, part = (workflow.modifier.avail_rulename(name) for name in (group_rule, part))
    if part is None or not workflow.is_rule(part):
        return
    settings, part_rule = workflow.resource_settings, workflow.get_rule(part)
    for name in (group_rule, part):
        part_rule.resources.update(Resources.from_mapping(settings.overwrite_resources.get(name, {})))
    threads = settings.overwrite_threads.get(part, settings.overwrite_threads.get(group_rule))
    if threads is not None:
        part_rule.resources["_cores"] = threads if isinstance(threads, Resource) else Resource("_cores", threads)


# In a container (`--sdm apptainer`, the Snakefile's `container:`) the jobs read this checkout's specs, printed tables and
# baselines at their paths here: the checkout is bound into the container at the same path.
def _bind_checkout():
    from snakemake_interface_executor_plugins.settings import DeploymentMethod

    settings = workflow.deployment_settings
    bind = f"--bind {shlex.quote(PROJECT)}"
    if DeploymentMethod.APPTAINER in settings.deployment_method and bind not in settings.apptainer_args:
        settings.apptainer_args = f"{settings.apptainer_args} {bind}".strip()


_bind_checkout()

# A suite's output dated in the future (a clock set wrong, a copy from a machine ahead) stops the workflow, named, before
# any job, a dry run included: Snakemake goes by dates alone, and such a file looks newer than whatever it was made from
# whenever that changed (redated to now, a table would keep its number after a metric edited later). Removed, it is made
# again, with what is made from it.
refuse_future_dated([RESULTS, REPORTS, *([DATA] if SCALE == "smoke" else [])])


def above(path, levels=1):
    """The folder `levels` above `path` (a rule's folder parameters derive from its input and output files)."""
    return str(Path(path).parents[levels - 1])


# A model's checkpoint, as the rules making one declare it: kept, or a temp() file, deleted once every job reading it
# has run, where config `keep_checkpoints` is false (the pilot)
MODEL_CHECKPOINT = (
    PLAN.checkpoint("{experiment}") if config["keep_checkpoints"] else temp(PLAN.checkpoint("{experiment}"))
)


def data_ready(wildcards):
    """A step's inputs from the data stage (for an {experiment} step: its grounded corpus too)."""
    return PLAN.data.inputs(wildcards.get("experiment"))


# What the rules making an {experiment}'s model read first (train and the imports: import_weights, import_standin,
# import_extra), the data stage's inputs and what the evaluations run after making the model read; and what they and
# the finetune rule write, its checkpoint and those evaluations' metric JSONs (a training's log and summary besides).
MODEL_INPUTS = [data_ready, PLAN.evaluation.with_training_inputs()]
MODEL_OUTPUTS = dict(checkpoint=MODEL_CHECKPOINT, metrics=PLAN.evaluation.with_training_outputs())
TRAINING_OUTPUTS = {  # keys quoted: a line starting `checkpoint` or `log` would read as a Snakemake keyword
    "checkpoint": MODEL_CHECKPOINT,
    "log": f"{RESULTS}/models/{{experiment}}/train_log.csv",
    "summary": f"{RESULTS}/models/{{experiment}}/train_summary.json",
    "metrics": MODEL_OUTPUTS["metrics"],
}


# The params every rule making an {experiment}'s model shares (train, finetune, import_weights, import_standin,
# import_extra): its spec, its folder, and the evaluations it runs in the same process once the model is made.
def experiment_spec(wildcards, threads):
    """The replication spec declaring the {experiment}: a path into the checkout, so a function of the job's threads,
    which Snakemake leaves out of the params whose change reruns a job (the path never told the spec's content; a
    moved or fresh checkout retrains nothing)."""
    return PLAN.spec_path(wildcards.experiment)


def model_folder(wildcards):
    """results/<scale>/models/<experiment>: where a training writes its checkpoint, log and summary."""
    return f"{RESULTS}/models/{wildcards.experiment}"


def evaluations_after(wildcards, threads):
    """The `:: evaluate ...` commands a job making the {experiment}'s model runs after it (`evaluate_with_training`)."""
    return PLAN.evaluation.with_training_commands(wildcards.experiment, threads)


# Warm start (config `warm_start`, hypvl.runtime.warm): a run that executes jobs on this machine starts one
# `hypvl serve` that imports torch and the model code once; every `hypvl` job is forked from it (each finds it
# through $HYPVL_WARM_SOCKET) instead of paying that start-up itself. <results>/logs/warm_server.log lists the jobs it
# served. It ends with the run (and on its own once Snakemake has gone). Jobs in a conda environment, in a container
# (`--sdm apptainer`) or on other machines start as before.
WARM_SERVERS = []


def start_warm_server():
    from snakemake_interface_executor_plugins.settings import DeploymentMethod

    from hypvl.runtime.warm import SOCKET_ENV

    # a job in a conda environment or a container runs other software than this process: never forked from it
    isolated = {DeploymentMethod.CONDA, DeploymentMethod.APPTAINER} & set(
        workflow.deployment_settings.deployment_method
    )
    if not config["warm_start"] or not workflow.local_exec or isolated:
        return
    import subprocess
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="hypvl-warm-"))  # a short path: Unix socket names are limited
    log_path = Path(RESULTS) / "logs" / "warm_server.log"  # a line per job it served
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            ["hypvl", "serve", "--socket", str(folder / "socket"), "--code-path", config["cpu_code_path"]],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    WARM_SERVERS.append((server, folder))
    os.environ[SOCKET_ENV] = str(folder / "socket")


def stop_warm_server():
    import shutil
    import subprocess

    for server, folder in WARM_SERVERS:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(folder, ignore_errors=True)


def check_slurm_status():
    """Under the SLURM executor, the job-status command this cluster answers (hypvl.workflow.slurm), said."""
    from hypvl.workflow.slurm import accounting_storage, status_command

    plugin, settings = workflow.executor_plugin, workflow.executor_settings
    if plugin is None or plugin.name != "slurm" or not hasattr(settings, "status_command"):
        return
    settings.status_command, line = status_command(settings.status_command, accounting_storage())
    print(f"hypvl: {line}", file=sys.stderr)


onstart:
    check_slurm_status()
    start_warm_server()


onsuccess:
    stop_warm_server()


onerror:
    stop_warm_server()


def table_result(path, caption, paper=None):
    """A table report's file as a result of the HTML report: under its paper's name (`paper`, else the {paper}
    wildcard's), then its table."""
    category = PLAN.reports.paper_name(paper) if paper else lambda w: PLAN.reports.paper_name(w.paper)
    return report(path, caption=caption, category=category, subcategory=lambda w: w.table.replace("table", "Table "))
