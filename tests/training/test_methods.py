"""The method registry (hypvl.methods) is each method's one declaration: every registered method builds (its class
imported only then) in the geometry its entry declares, the registry loads no torch, and a method a plug-in registers
(here `unbuilt`, the method of the toy spec's unbuilt experiment) is accepted by recipe checking, planning, model
building and the release format without touching another module; a module of config `plugins` reaches planning and
training."""

import ast
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch
import yaml

from helpers import REPO
from helpers.models import TINY
from helpers.plan_fixture import EXPECTED, TOY_SPEC, toy_plan_in
from helpers.train_stream import _shards
from hypvl.outside import extras
from hypvl.errors import InputError
from hypvl.methods import METHODS, RADIAL_METHOD, Method, built, names, register_method
from hypvl.models.build import build_model, model_class
from hypvl.models.clip import CLIP
from hypvl.train.recipe import check_recipe, stream_settings, supported_overrides


@pytest.mark.parametrize("method", built())
def test_every_built_method_builds_in_the_geometry_its_entry_declares(method):
    model = build_model(method, "vit_s16", TINY)
    assert type(model) is model_class(method) and model.geometry == METHODS[method].geometry


def test_the_registry_is_what_it_replaced():
    """The five places a method was named before (models.methods, models.build.METHODS, train.recipe.RADIAL_METHOD,
    extras.RELEASED_METHODS, the plug-in registry of model classes) read as they did."""
    assert built() == ("clip", "meru", "hycoclip", "poinclip", "syntax_meru")
    assert list(METHODS) == [*built(), RADIAL_METHOD] == [*built(), "radial_ft"]
    assert names(aligns=True) == ("radial_ft",)
    assert {name: METHODS[name].geometry for name in names(released=True)} == {
        "clip": "euclidean", "meru": "lorentz", "hycoclip": "lorentz"}
    assert names(parses=True) == ("syntax_meru",)
    assert names(compositional=True) == names(border_view=True) == ("hycoclip",)


def test_the_registry_loads_no_torch():
    probe = "import sys, hypvl.methods, hypvl.train.recipe, hypvl.outside.extras; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "False\n"


def test_only_the_registry_lists_methods():
    """No other module of src/hypvl holds a collection of method names (a tuple, list, set or dict keys of three or
    more; two may be something else of the same names, e.g. data.catalog's prompt sets `meru` and `clip`)."""
    listing = []
    for path in sorted((REPO / "src" / "hypvl").rglob("*.py")):
        if path == REPO / "src" / "hypvl" / "methods.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
            if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)) and sum(
                    isinstance(item, ast.Constant) and item.value in METHODS for item in items) >= 3:
                listing.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert listing == []


class Plugged(CLIP):
    """A plug-in's model class: CLIP with a constructor argument of its own."""

    def __init__(self, visual, textual, embed_dim, temperature=0.07, wobble=0.0):
        super().__init__(visual, textual, embed_dim, temperature=temperature)
        self.wobble = wobble


@pytest.fixture
def plugged():
    """A method a plug-in registers, for this test only."""
    yield register_method(Method("unbuilt", f"{__name__}:Plugged", "euclidean", ("temperature", "wobble"),
                                 released=True, parses=True))
    del METHODS["unbuilt"]


def test_a_plugin_method_is_accepted_everywhere_by_its_registration(plugged, tmp_path):
    experiment = {"id": "mine", "method": "unbuilt", "overrides": {"wobble": 0.5, "steps": 3}}
    check_recipe(experiment)
    assert {"wobble", "steps", "embed_dim", "eval_prompts"} <= supported_overrides("unbuilt")
    assert stream_settings(experiment)["syntax"] and stream_settings(experiment)["mode"] == "pairs"
    with pytest.raises(InputError, match="takes no boxes"):
        check_recipe({**experiment, "boxes": True})
    model = build_model("unbuilt", "vit_s16", TINY, {"wobble": 0.5, "lr": 1.0})
    assert type(model) is Plugged and model.wobble == 0.5
    source = tmp_path / "mine.pth"
    source.touch()
    extra = extras.parse_extra("mine", {"source": f"released-format:{source}", "geometry": "euclidean",
                                        "method": "unbuilt", "backbone": "vit_s16"})
    assert extra.method == "unbuilt"
    plan, _ = toy_plan_in(tmp_path)  # its experiment toy_unbuilt names the method: now planned like any other
    assert plan.runnable("toy_unbuilt") and plan.blocker("toy_unbuilt") is None


def test_a_method_is_registered_once(plugged):
    register_method(plugged)  # the same declaration again: nothing changes
    with pytest.raises(InputError, match="'unbuilt' is registered twice"):
        register_method(Method("unbuilt", None, "lorentz"))
    with pytest.raises(InputError, match="unknown method 'other'"):
        check_recipe({"id": "x", "method": "other"})
    with pytest.raises(InputError, match="unknown method 'radial_ft'"):
        build_model(RADIAL_METHOD, "vit_s16", TINY)


PLUGIN = '''
from hypvl.methods import METHODS, Method, register_method

meru = METHODS["meru"]  # MERU's model under a name of its own: a method only the plug-in declares
register_method(Method("plugmeru", meru.model, meru.geometry, meru.overrides))
'''


def test_config_plugins_reach_planning_and_training(tmp_path):
    """A method declared only by a module of config `plugins`: a spec naming it is planned (the plan imports the
    plug-ins before reading a spec) and `hypvl train` trains it (as it imports them before reading its spec); without
    the plug-in, the experiment is not runnable."""
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "plugmeru_plugin.py").write_text(PLUGIN)
    replication = tmp_path / "replication"
    replication.mkdir()
    spec = {**TOY_SPEC, "experiments": {**TOY_SPEC["experiments"], "toy_unbuilt": {
        "method": "plugmeru", "backbone": "vit_s16", "data": "grit", "source": "train"}}}
    (replication / "toy.yaml").write_text(yaml.safe_dump(spec))
    shutil.copytree(EXPECTED, tmp_path / "expected")  # beside the spec, where `hypvl train --spec` reads it
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "plugins"), os.environ.get("PYTHONPATH", "")])}
    plan = ("import sys, json; from hypvl.config import load_config; from hypvl.workflow import Plan; "
            "config = {**load_config(), 'replication_dir': sys.argv[1], 'expected_dir': sys.argv[2], "
            "'results_dir': sys.argv[3], 'plugins': json.loads(sys.argv[4])}; "
            "plan = Plan(config); print(plan.runnable('toy_unbuilt'), plan.blocker('toy_unbuilt'))")
    argv = [sys.executable, "-c", plan, str(replication), str(EXPECTED), str(tmp_path / "results")]
    planned = subprocess.run([*argv, '["plugmeru_plugin"]'], capture_output=True, text=True, env=env, timeout=120)
    assert planned.returncode == 0 and planned.stdout.strip() == "True None", planned.stderr[-2000:]
    refused = subprocess.run([*argv, "[]"], capture_output=True, text=True, env=env, timeout=120)
    assert refused.returncode == 0 and refused.stdout.startswith("False "), refused.stderr[-2000:]
    _shards(tmp_path / "data" / "train", n=8, boxes=lambda i: 1)
    config = {"data_dir": str(tmp_path / "data"), "corpora": {"grit": "train"}, "plugins": ["plugmeru_plugin"],
              "model": {**TINY, "backbones": {"vit_s16": TINY["backbones"]["vit_s16"]}},
              "train": {"steps": 2, "batch_size_scale": 4 / 768, "shuffle_buffer": 4}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    trained = subprocess.run([sys.executable, "-m", "hypvl.cli", "train", "--spec", str(replication / "toy.yaml"),
                              "--experiment", "toy_unbuilt", "--configfile", str(tmp_path / "config.yaml"),
                              "--out", str(tmp_path / "model"), "--quiet"],
                             capture_output=True, text=True, env=env, timeout=300)
    assert trained.returncode == 0, trained.stderr[-2000:]
    recipe = torch.load(tmp_path / "model" / "checkpoint.pt", weights_only=True)["recipe"]
    assert recipe["method"] == "plugmeru" and json.loads((tmp_path / "model" / "train_summary.json").read_text())[
        "schedule"]["steps"] == 2
