"""The evaluation stage's plan (workflows/evaluate.smk): one job per (experiment, task group), each writing one metric
JSON per task of the group (groups and their tasks: hypvl.tasks), or per task of the subset the targets read of that
experiment (`rules`): no model is evaluated on sets no table reads of it.

An experiment is evaluated on the model that serves it (`Core.model_of`), with its own id. A group in
`evaluate_with_training` is computed by the job that makes the model (train, finetune, import), in its process,
after it (`with_training_commands`).
"""

import shlex
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from hypvl.tasks import task_group
from hypvl.workflow.core import Core
from hypvl.workflow.data import DataStage
from hypvl.workflow.patterns import ANY_ID, excluding


@dataclass(frozen=True)
class EvaluationRule:
    """One evaluate rule: the tasks of `group` its jobs compute (all, or a subset) and the wildcard constraint of the
    experiments it evaluates (`experiments`)."""

    name: str
    group: str
    tasks: tuple[str, ...]
    experiments: str
    subset: bool  # `tasks` is not the whole group: the job is told which (`--tasks`)


class EvaluationStage:
    """The evaluation jobs of one plan and the metric files they write."""

    def __init__(self, plan: Core, data: DataStage):
        self.plan = plan
        self.data = data
        self._acquisitions: dict[tuple, list[str]] = {}  # tasks -> the acquisitions holding what they read

    def computable(self, task: str) -> bool:
        """True when some evaluation group computes `task` at this scale."""
        return task_group(task, self.plan.scale) is not None

    def group_outputs(self, group: str, tasks=None) -> list[str]:
        """Metric JSON patterns (with an {experiment} wildcard) that one `group` job writes (of `tasks`: a subset)."""
        metrics = self.plan.results / "metrics" / "{experiment}"
        return [str(metrics / f"{task}.json") for task in (self.plan.groups[group] if tasks is None else tasks)]

    def rules(self, read) -> list[EvaluationRule]:
        """The evaluate rules, given the metric JSONs the targets read (`read`: ReportStage.export_inputs). Per group:
        one for each distinct proper subset of its tasks that the targets read of some experiments (HierarCaps'
        models: 2 of the 20 zero-shot sets; each ablation of HyCoCLIP's Table 6: ImageNet alone), evaluating those
        experiments on it alone; and one computing the whole group for every other experiment (a metric asked
        for by path included). A group in `evaluate_with_training` is evaluated here only on the experiments no job
        making a model evaluates."""
        tasks_read = defaultdict(set)  # experiment -> the tasks the targets read of it
        for path in map(Path, read):
            tasks_read[path.parent.name].add(path.stem)
        rules = []
        for group, tasks in self.plan.groups.items():
            with_training = group in self.plan.with_training
            subsets = defaultdict(list)  # proper subset of the group's tasks -> the experiments read on it alone
            for experiment, names in sorted(tasks_read.items()):
                subset = tuple(task for task in tasks if task in names)
                if 0 < len(subset) < len(tasks) and not (with_training and self.plan.makes_model(experiment)):
                    subsets[subset].append(experiment)
            every = self.plan.trained_pattern(False) if with_training else ANY_ID
            partial = [experiment for experiments in subsets.values() for experiment in experiments]
            rules.append(EvaluationRule(f"evaluate_{group}", group, tuple(tasks), excluding(every, partial), False))
            rules += [EvaluationRule(f"evaluate_{group}_part{number}", group, subset, self.plan.pattern(experiments),
                                     True)
                      for number, (subset, experiments) in enumerate(sorted(subsets.items()), 1)]
        return rules

    def with_training_outputs(self) -> list[str]:
        """Metric JSON patterns a job making a model also writes: those of the `evaluate_with_training` groups."""
        return [path for group in self.plan.with_training for path in self.group_outputs(group)]

    def metric_files(self, needs) -> list[str]:
        """Metric JSON paths of the (experiment, task) pairs of `needs` the suite can produce, sorted."""
        return sorted({str(self.plan.results / "metrics" / exp / f"{task}.json")
                       for exp, task in needs if self.plan.runnable(exp) and self.computable(task)})

    def inputs(self, rule: EvaluationRule, experiment: str) -> list[str]:
        """What a job of evaluate `rule` needs from the data stage: its inputs (`DataStage.inputs`), the linear-probe
        splits its tasks read (`DataStage.probe_inputs`), and at paper scale the acquisitions of the data they read."""
        if rule.tasks not in self._acquisitions:
            data = self.data.group_data(rule.group, rule.tasks if rule.subset else None)
            self._acquisitions[rule.tasks] = self.data.acquisitions(data)
        return [*self.data.inputs(experiment), *self.data.probe_inputs(rule.tasks), *self._acquisitions[rule.tasks]]

    def args(self, group: str, experiment: str, threads: int, tasks=None) -> str:
        """The shell-quoted arguments of `hypvl evaluate` computing `group` (only `tasks`, where given) on the model of
        `experiment` (with the prompt set its `eval_prompts` override names, if any)."""
        model = self.plan.model_of(experiment)
        args = ["evaluate", group, "--experiment", experiment, "--checkpoint", self.plan.checkpoint(model),
                "--out-dir", str(self.plan.results / "metrics" / experiment), "--threads", str(threads)]
        args += [] if tasks is None else ["--tasks", *tasks]
        args += [] if model == experiment else ["--model-of", model]  # the checkpoint must hold that model
        prompts = self.plan.experiment(experiment).overrides.get("eval_prompts")
        args += [] if prompts is None else ["--prompts", prompts]
        return f"{shlex.join(args)} --config-json {self.plan.step_config('evaluate')}"

    def with_training_commands(self, experiment: str, threads: int) -> str:
        """The `:: evaluate ...` commands a job making the model of `experiment` runs after it, in its process:
        one per `evaluate_with_training` group (empty where the list is)."""
        return "".join(f" :: {self.args(group, experiment, threads)}" for group in self.plan.with_training)

    def with_training_inputs(self) -> list[str]:
        """What a job making a model needs for its `evaluate_with_training` groups beyond its own inputs: the
        linear-probe splits they read."""
        return self.data.probe_inputs([task for group in self.plan.with_training for task in self.plan.groups[group]])
