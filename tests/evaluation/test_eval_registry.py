"""The task registry and the `hypvl evaluate` command: groups partition the tasks, every group has a module,
unknown tasks are refused; Spearman rho against scipy."""

import argparse
import importlib

import numpy as np
import pytest
from scipy.stats import spearmanr

from hypvl.errors import InputError
from hypvl.evaluate import commands
from hypvl.evaluate.metrics.hierarcaps import spearman_rho
from hypvl.tasks import GROUP_MODULES, all_tasks, group_tasks, task_group


@pytest.mark.parametrize("scale", ["smoke", "full"])
def test_groups_partition_the_tasks_and_each_has_a_runner(scale):
    groups = group_tasks(scale)
    listed = [task for tasks in groups.values() for task in tasks]
    assert sorted(listed) == sorted(all_tasks(scale)) and len(set(listed)) == len(listed)
    for group, tasks in groups.items():
        assert callable(importlib.import_module(GROUP_MODULES[group]).run)
        assert all(task_group(task, scale) == group for task in tasks)
    assert task_group("zs_nonexistent", scale) is None
    for task in ("zs_imagenet", "hier_imagenet", "ret_coco", "ret_flickr30k", "det_coco_novel", "vlc_object",
                 "vlc_attribute", "vlc_relation", "vg_attribution", "hierarcaps", "hyperlex", "breeds",
                 "linprobe_food101", "stats_radius"):
        assert task in listed


def test_full_scale_covers_the_twenty_meru_datasets_with_catalog_chance():
    tasks = all_tasks("full")
    assert len([t for t in tasks if t.startswith("zs_")]) == 20
    assert len([t for t in tasks if t.startswith("linprobe_")]) == 19
    assert tasks["zs_imagenet"].metrics[0].chance == pytest.approx(0.1)
    assert {m.name: m.higher_is_better for m in tasks["hier_imagenet"].metrics}["tie"] is False


def test_every_group_is_a_subcommand_and_unknown_tasks_are_refused(tmp_path):
    parser = argparse.ArgumentParser()
    commands.add_commands(parser.add_subparsers(dest="command"))
    for group in GROUP_MODULES:
        args = parser.parse_args(["evaluate", group, "--experiment", "e", "--checkpoint", "c", "--out-dir", "o"])
        assert args.group == group and args.func is commands.evaluate_group
    args = parser.parse_args(["evaluate", "scene", "--experiment", "e", "--checkpoint", "c", "--out-dir",
                              str(tmp_path), "--tasks", "zs_imagenet"])
    with pytest.raises(InputError, match="group 'scene' at scale 'smoke' has no tasks \\['zs_imagenet'\\]"):
        commands.evaluate_group(args)


def test_spearman_rho_matches_scipy_with_ties():
    rng = np.random.default_rng(0)
    pred, target = rng.normal(size=40), rng.integers(0, 6, size=40).astype(float)  # many ties in target
    pred[:5] = pred[5]
    assert spearman_rho(pred, target) == pytest.approx(spearmanr(pred, target).statistic, abs=1e-12)
    with pytest.raises(ValueError, match="constant"):
        spearman_rho(pred, np.ones(40))
