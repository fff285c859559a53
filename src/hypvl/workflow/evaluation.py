"""The evaluation stage's plan (workflows/evaluate.smk): one job per (experiment, task group), each writing one metric
JSON per task of the group (groups and their tasks: hypvl.tasks).

An experiment is evaluated on the model that serves it (`Core.model_of`), with its own id. A group in
`evaluate_with_training` is computed by the job that makes the model (train, finetune, import), in its process,
after it (`with_training_commands`).
"""

import shlex

from hypvl.tasks import task_group
from hypvl.workflow.core import Core
from hypvl.workflow.data import DataStage


class EvaluationStage:
    """The evaluation jobs of one plan and the metric files they write."""

    def __init__(self, plan: Core, data: DataStage):
        self.plan = plan
        self.data = data
        self._acquisitions: dict[str, list[str]] = {}  # group -> the acquisitions holding what it reads

    def computable(self, task: str) -> bool:
        """True when some evaluation group computes `task` at this scale."""
        return task_group(task, self.plan.scale) is not None

    def group_outputs(self, group: str) -> list[str]:
        """Metric JSON patterns (with an {experiment} wildcard) that one `group` job writes."""
        metrics = self.plan.results / "metrics" / "{experiment}"
        return [str(metrics / f"{task}.json") for task in self.plan.groups[group]]

    def with_training_outputs(self) -> list[str]:
        """Metric JSON patterns a job making a model also writes: those of the `evaluate_with_training` groups."""
        return [path for group in self.plan.with_training for path in self.group_outputs(group)]

    def metric_files(self, needs) -> list[str]:
        """Metric JSON paths of the (experiment, task) pairs of `needs` the suite can produce, sorted."""
        return sorted({str(self.plan.results / "metrics" / exp / f"{task}.json")
                       for exp, task in needs if self.plan.runnable(exp) and self.computable(task)})

    def inputs(self, group: str, experiment: str) -> list[str]:
        """What evaluating `group` on `experiment` needs from the data stage: its inputs (`DataStage.inputs`), the
        linear-probe splits the group reads (`DataStage.probe_inputs`), and at paper scale the acquisitions of the
        data the group reads."""
        if group not in self._acquisitions:
            self._acquisitions[group] = self.data.acquisitions(self.data.group_data(group))
        return [*self.data.inputs(experiment), *self.data.probe_inputs([group]), *self._acquisitions[group]]

    def args(self, group: str, experiment: str, threads: int) -> str:
        """The shell-quoted arguments of `hypvl evaluate` computing `group` on the model of `experiment` (with the
        prompt set its `eval_prompts` override names, if any)."""
        model = self.plan.model_of(experiment)
        args = ["evaluate", group, "--experiment", experiment, "--checkpoint", self.plan.checkpoint(model),
                "--out-dir", str(self.plan.results / "metrics" / experiment), "--threads", str(threads)]
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
        return self.data.probe_inputs(self.plan.with_training)
