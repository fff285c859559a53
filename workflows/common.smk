# Shared by the workflow files: the plan of this config (hypvl.workflow.Plan answers which files a target
# needs), the folders, and the software each step runs (the `hypvl` command of this package).
import re
from pathlib import Path

from hypvl.workflow import Plan

PLAN = Plan(config)
SCALE = config["scale"]
DATA = config["data_dir"]
RESULTS = config["results_dir"]
REPORTS = config["reports_dir"]
THREADS = config["threads_per_job"]
ENV = "../environment.yml"  # conda users: the one environment every rule runs in


def above(path, levels=1):
    """The folder `levels` above `path` (a rule's folder parameters derive from its input and output files)."""
    return str(Path(path).parents[levels - 1])


def data_ready(wildcards):
    """A step's inputs from the data stage (for an {experiment} step: its grounded corpus too)."""
    return PLAN.data_inputs(wildcards.get("experiment"))
