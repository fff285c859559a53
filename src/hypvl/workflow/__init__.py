"""What the Snakemake workflow plans: targets and inputs derived from the replication specs, by stage.

The Snakefile stays declarative; the plan answers "which files does this report need?" from the specs, the task
registry and the config. Only jobs the suite can run are planned: an experiment it trains with a method it
implements, on a corpus the config provides, with overrides it honours, or whose weights come from outside and can
be obtained (fetched, held locally, or stood in for at smoke scale); and a task some evaluation group computes at
the scale. Every other cell renders as missing with the plan's reason (`PLAN.reports.blockers`).

`Plan` is the core (`core`: experiments, seed variants, runnability, recipes, patterns, step configs) with one
object per stage, each beside the rule files it answers, each depending only on the core and on the stages before
it in the data flow:

    PLAN.data        data.py        workflows/data.smk, acquire.smk, grounding.smk
    PLAN.training    training.py    workflows/train.smk
    PLAN.outside     outside.py     workflows/outside.smk (weights from outside, stand-ins)
    PLAN.evaluation  evaluation.py  workflows/evaluate.smk (and the evaluations a job making a model runs after it)
    PLAN.reports     reports.py     workflows/report.smk

Planning imports no torch, numpy or scipy (every `snakemake` call pays for what this package imports).
"""

from hypvl.workflow.core import Core
from hypvl.workflow.data import DataStage
from hypvl.workflow.evaluation import EvaluationStage
from hypvl.workflow.outside import OutsideStage
from hypvl.workflow.reports import ReportStage
from hypvl.workflow.training import TrainingStage


class Plan(Core):
    """The workflow's plan for one config: the core and its stages."""

    def __init__(self, config: dict):
        super().__init__(config)
        self.data = DataStage(self)
        self.training = TrainingStage(self, self.data)
        self.outside = OutsideStage(self, self.data, self.training)
        self.evaluation = EvaluationStage(self, self.data)
        self.reports = ReportStage(self, self.evaluation)
