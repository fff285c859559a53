"""Each model is evaluated only on the tasks the targets read of it (`PLAN.evaluation.rules`): rules
evaluate_<group>_part<n> compute a proper subset of a group for the experiments read on it alone, and evaluate_<group>
the whole group for every other experiment."""

import re
import shlex
from collections import defaultdict
from pathlib import Path

import pytest

from helpers import REPO
from hypvl.config import load_config
from hypvl.workflow import Plan
from hypvl.workflow.patterns import ANY_ID, excluding

PILOT = [REPO / "workflows" / "config" / "full.yaml", REPO / "workflows" / "config" / "pilot.yaml"]


@pytest.fixture(scope="module")
def pilot():
    plan = Plan(load_config(PILOT))
    return plan, plan.evaluation.rules(plan.reports.export_inputs())


def matching(rules, group: str, experiment: str) -> list:
    """The evaluate rules of `group` whose wildcard constraint takes `experiment`."""
    return [rule for rule in rules if rule.group == group and re.fullmatch(rule.experiments, experiment)]


def tasks_read(plan) -> dict[str, set[str]]:
    """Experiment -> the tasks the tables and the regression read of it, from the metric paths."""
    read = defaultdict(set)
    for path in map(Path, plan.reports.export_inputs()):
        read[path.parent.name].add(path.stem)
    return read


def test_excluding_refuses_exactly_the_ids_alone_and_inside_a_path():
    constraint = excluding(ANY_ID, ["hcaps_clip_b", "hcaps_align"])
    cases = {"hcaps_clip_b": False, "hcaps_align": False, "hcaps_clip_b_ft": True, "hcaps_clip": True, "meru_vits": True}
    for experiment, taken in cases.items():
        assert bool(re.fullmatch(constraint, experiment)) == taken
        path = rf"results/metrics/(?P<experiment>{constraint})/zs_cifar10\.json"
        assert bool(re.fullmatch(path, f"results/metrics/{experiment}/zs_cifar10.json")) == taken
    assert excluding(ANY_ID, []) == ANY_ID


def test_each_experiment_is_evaluated_once_per_group_on_exactly_the_tasks_read_of_it(pilot):
    plan, rules = pilot
    subsets = 0
    for experiment, read in tasks_read(plan).items():
        for group, tasks in plan.groups.items():
            wanted = tuple(task for task in tasks if task in read)
            if wanted:
                [rule] = matching(rules, group, experiment)
                assert rule.tasks == wanted and rule.subset == (len(wanted) < len(tasks))
                assert rule.name == f"evaluate_{group}" if not rule.subset else rule.name.startswith(f"evaluate_{group}_")
                subsets += rule.subset
    assert subsets > 100  # HierarCaps' models, HyCoCLIP's ablations, PoinCLIP's grid...
    for group in plan.groups:  # a metric asked for by path, of a model no target reads: the whole group
        [rule] = matching(rules, group, "a_model_no_table_reads")
        assert rule.tasks == tuple(plan.groups[group]) and not rule.subset


def test_hierarcaps_models_compute_and_acquire_only_the_two_cifar_sets(pilot):
    plan, rules = pilot
    [rule] = matching(rules, "zeroshot", "hcaps_clip_b")
    assert rule.tasks == ("zs_cifar10", "zs_cifar100")
    args = shlex.split(plan.evaluation.args(rule.group, "hcaps_clip_b", 1, rule.tasks))
    at = args.index("--tasks")
    assert args[at + 1:at + 3] == ["zs_cifar10", "zs_cifar100"] and args[at + 3].startswith("--")
    acquired = [path for path in plan.evaluation.inputs(rule, "hcaps_clip_b") if "/acquired/" in path]
    assert acquired == [plan.data.acquisition_marker(name) for name in ("cifar10", "cifar100")]
    [whole] = matching(rules, "zeroshot", "a_model_no_table_reads")
    assert len([path for path in plan.evaluation.inputs(whole, "hcaps_clip_b") if "/acquired/" in path]) == 20
    every = next(exp for exp, read in sorted(tasks_read(plan).items()) if read >= set(plan.groups["zeroshot"]))
    assert matching(rules, "zeroshot", every) == [whole]  # MERU's models: Table 8 prints the 20 sets
    assert "--tasks" not in plan.evaluation.args("zeroshot", every, 1)


def test_the_retrieval_read_of_one_set_acquires_that_set_alone(pilot):
    plan, rules = pilot
    [rule] = matching(rules, "retrieval", "hcaps_clip_b_ft_clip_objective")  # HierarCaps reads COCO retrieval only
    assert rule.tasks == ("ret_coco",)
    acquired = [path for path in plan.evaluation.inputs(rule, "hcaps_clip_b_ft_clip_objective") if "/acquired/" in path]
    assert acquired == [plan.data.acquisition_marker("coco_val2017")]


def test_a_group_the_training_job_evaluates_is_left_to_it_for_the_models_it_makes():
    plan = Plan(load_config())  # smoke: zero-shot with training
    rules = plan.evaluation.rules(plan.reports.export_inputs())
    trained = "hyco_hycoclip_vits_grit"
    assert "zeroshot" in plan.with_training and plan.makes_model(trained)
    assert matching(rules, "zeroshot", trained) == []
    served = [exp for exp in tasks_read(plan) if not plan.makes_model(exp)
              and any(task.startswith("zs_") for task in tasks_read(plan)[exp])]
    assert served and all(len(matching(rules, "zeroshot", exp)) == 1 for exp in served)
