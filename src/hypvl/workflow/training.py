"""The training stage's plan (workflows/train.smk): the jobs that train a model (rule train) or align one (rule
finetune), what they read, and what they ask of the machine.

One job trains each distinct recipe (`Core.model_of`). At paper scale a training job asks for the GPUs, nodes, memory
and time its model and schedule need (hypvl.workflow.cost), accumulating gradients over micro-batches where fewer GPUs
than the papers' batch needs are allowed (its config's `train.accum_steps`), and starts torchrun with a process per GPU;
a run longer than `resources.max_runtime` continues from its checkpoint in a retry. Jobs are prioritised by their cost,
so the longest runs start first.
"""

import json
import shlex

from hypvl.config import shared_train_settings
from hypvl.workflow.cost import Job, Run, model_towers, size_job
from hypvl.errors import InputError
from hypvl.train.recipe import resolve_schedule, steps_for, stream_mode, train_section_for
from hypvl.workflow.core import Core
from hypvl.workflow.steps import step_sections
from hypvl.workflow.data import DataStage


class TrainingStage:
    """The train and finetune jobs of one plan."""

    # the resources a training job may set (`resources`)
    RESOURCES = ("gpu", "gres", "nodes", "mem_mb", "runtime", "cpus_per_task", "mpi", "tasks", "tasks_per_gpu")

    def __init__(self, plan: Core, data: DataStage):
        self.plan = plan
        self.data = data
        self.config = plan.config
        self._jobs: dict[str, Job] = {}

    def trained_by(self, rule: str) -> str:
        """The experiment ids whose model rule `rule` makes: `train` (hypvl train) or `finetune` (hypvl finetune)."""
        makes = self.plan.fine_tunes if rule == "finetune" else self.plan.trains
        return self.plan.pattern(exp for exp in self.plan.experiments() if makes(exp))

    def experiment_config(self, experiment: str, step: str = "train") -> str:
        """The shell-quoted JSON of the config sections training `experiment` reads (`step`: train, or standin): of
        `train.steps_for`, only the entries matching it (so editing another experiment's entry does not retrain it);
        on GPUs, `train.accum_steps` as its job's size has it (`job`)."""
        sections = step_sections(self.config, step)
        own = steps_for(experiment, self.config["train"])
        sections["train"] = shared_train_settings(sections["train"])
        sections["train"].update({"steps_for": own} if own else {})
        job = self.job(experiment) if step == "train" else None
        sections["train"].update({"accum_steps": job.accum_steps} if job else {})
        return shlex.quote(json.dumps(sections, sort_keys=True))

    def init_checkpoint(self, experiment: str) -> list[str]:
        """The checkpoint an experiment starts from (its `init_from` override), if any."""
        start = self.plan.experiment(experiment).overrides.get("init_from")
        return [] if start is None else [self.plan.checkpoint(self.plan.model_of(start))]

    def base_checkpoint(self, experiment: str) -> str:
        """The checkpoint radial_ft experiment `experiment` starts from."""
        return self.plan.checkpoint(self.plan.model_of(self.plan.base_of(experiment)))

    def finetune_data(self, experiment: str) -> dict[str, str]:
        """What radial_ft experiment `experiment` aligns on, as `hypvl finetune` options: `--train-csv`, the HierarCaps
        train CSV (its `data` in `eval.datasets`), and for the CLIP objective `--train-images`, the CC3M shards
        holding the rows' images."""
        declared, datasets = self.plan.experiment(experiment), self.config["eval"]["datasets"]
        options = {"--train-csv": str(self.data.root / datasets[declared.data])}
        if declared.overrides.get("objective") == "clip":
            options["--train-images"] = str(self.data.root / datasets["hierarcaps_train_images"])
        return options

    def finetune_inputs(self, experiment: str) -> list[str]:
        """What aligning `experiment` needs from the data stage: its inputs (`DataStage.inputs`) and its
        `finetune_data`, which the smoke world writes; at paper scale, the acquisitions holding them."""
        data = list(self.finetune_data(experiment).values())
        held = self.data.synthesized(data) if self.plan.scale == "smoke" else self.data.acquisitions(data)
        return [*self.data.inputs(experiment), *held]

    def run(self, experiment: str) -> Run:
        """The training run of `experiment` at this scale: its towers, global batch, steps, encodings per sample
        (2 for a method that also encodes a box image and text per sample) and whether its encoders are frozen."""
        declared = self.plan.experiment(experiment)
        schedule = resolve_schedule(declared.overrides, train_section_for(experiment, self.config["train"]))
        encodings = 2 if stream_mode(declared.method, declared.boxes) == "compositional" else 1
        return Run(model_towers(self.config["model"], declared.backbone), schedule.batch_size, schedule.steps,
                   encodings, bool(declared.overrides.get("freeze_encoders")))

    def cost(self, experiment: str) -> float:
        """Training TFLOPs of `experiment`."""
        return self.run(experiment).flops / 1e12

    def priority(self, experiment: str) -> float:
        """The train rule's priority, in [-1, 0): below every other job's (Snakemake's default 0), so a model's
        evaluations, compares and reports run as soon as they can, before further training (results come in as
        models finish, and where checkpoints are temp() files few are on disk at once); among training runs the
        longest (`cost`) first, so the last minutes do not leave a core idle."""
        return self.cost(experiment) / self.first_priority() - 1

    def making_priority(self) -> float:
        """The priority of the jobs that make a model without training it (importing weights from outside,
        fine-tuning): below every job but training (`priority`), so a made model is evaluated, and its temp()
        checkpoint gone, before the next is made (the pilot's 17 imported and 22 fine-tuned full-size models, made
        first at the default priority, filled its disk), and above every training run, so their results come first."""
        return -0.5 / self.first_priority()

    def _trained(self) -> list[str]:
        """The experiments the train rule makes a model for."""
        return [exp for exp in self.plan.experiments() if self.plan.trains(exp) and self.plan.runnable(exp)]

    def first_priority(self) -> float:
        """A job priority above every other job's: what the data acquisition, probe_splits and weight fetching jobs
        take (above 1 + every training run's `cost`)."""
        return 1 + max((self.cost(exp) for exp in self._trained()), default=0)

    def job(self, experiment: str) -> Job | None:
        """The GPU job that trains `experiment` (hypvl.workflow.cost: its GPUs, and the micro-batches of each one's
        share of the batch where fewer GPUs than the batch needs are allowed), or None where training is one CPU
        process."""
        resources = self.config["resources"]
        if resources["gpu"] is None:
            return None
        if experiment not in self._jobs:  # asked for once per resource of every job: size each run once
            try:
                train = self.config["train"]
                self._jobs[experiment] = size_job(self.run(experiment), resources["gpu"], resources["max_runtime"],
                                                  resources["runtime_margin"], train["accum_steps"],
                                                  train["num_workers"])
            except InputError as exc:
                raise InputError(f"experiment {experiment!r}: {exc}") from None
        return self._jobs[experiment]

    def job_resources(self) -> dict:
        """The train rule's resources: each RESOURCES name a function of the job's wildcards (`resources`)."""
        return {name: (lambda wildcards, name=name: self.resources(wildcards.experiment).get(name))
                for name in self.RESOURCES}

    def resources(self, experiment: str) -> dict:
        """Snakemake resources of the job training `experiment` (None: not set), named as the SLURM executor plugin
        reads them: one node asks for `gpu` GPUs; several nodes ask for `gres` GPUs on each, one task per node,
        and `mpi` marks the job as launching its own `srun` (the train rule's launcher)."""
        job = self.job(experiment)
        if job is None:
            return self.plan.step_resources("train")
        several = job.nodes > 1
        return {"gpu": None if several else job.gpus, "gres": f"gpu:{job.gpus_per_node}" if several else None,
                "nodes": job.nodes, "mem_mb": job.mem_mb, "runtime": job.runtime, "cpus_per_task": job.threads,
                "mpi": "srun" if several else None, "tasks": job.nodes if several else None,
                "tasks_per_gpu": 0 if several else None}

    def threads(self, experiment: str) -> int:
        """CPU cores of the job training `experiment` (on each node)."""
        job = self.job(experiment)
        return self.config["threads_per_job"] if job is None else job.threads

    def launcher(self, experiment: str, threads: int) -> str:
        """The command that starts `hypvl train` for `experiment`, with its `--threads` (per process): `hypvl` itself
        for a CPU run (on the job's `threads`); torchrun with a process per GPU on one node; on several nodes, `srun`
        starting one torchrun per node that meet at the first node (torchrun's c10d rendezvous, the SLURM job id
        naming the run). A GPU run's processes share the node's cores. The first node is asked of the scheduler by the
        job's id: the SLURM plugin's job step keeps no other SLURM_* variable (SLURM_JOB_NODELIST among them)."""
        job = self.job(experiment)
        if job is None:
            return f"hypvl train --threads {threads}"
        per_rank = f"-m hypvl.cli train --threads {job.threads // job.gpus_per_node}"
        if job.nodes == 1:
            return f"torchrun --standalone --nproc-per-node {job.gpus} {per_rank}"
        head = '"$(scontrol show hostnames "$(squeue -h -j "$SLURM_JOB_ID" -o %N)" | head -n 1)"'
        return (f"srun --nodes {job.nodes} --ntasks-per-node 1 --kill-on-bad-exit=1 torchrun --nnodes {job.nodes}"
                f" --nproc-per-node {job.gpus_per_node} --rdzv-backend c10d --rdzv-id \"$SLURM_JOB_ID\""
                f" --rdzv-endpoint {head}:29500 {per_rank}")

    def retries(self) -> int | None:
        """Further attempts the longest training run needs beyond its first job (each resuming from the last
        one's checkpoint): the train rule's `retries`; None where every run fits in one job (Snakemake's own
        `--retries` then, the SLURM profile's: a job cut short, by its time limit, `scancel` or a lost node, resumes
        from its resume.pt in the next)."""
        jobs = [self.job(exp) for exp in self._trained()]
        needed = max((job.attempts for job in jobs if job is not None), default=1)
        return needed - 1 if needed > 1 else None
