"""What the bad-input corpus (tests/trust/test_bad_inputs_malformed.py) builds its cases from: the commands it runs, and
each kind of case (a spec, a printed table, metrics, a config, a data file, a checkpoint, a fine-tuning, a manifest, a
probe source) made bad in one named way under `tmp_path`."""

import json
import re
import shutil
import tarfile
from pathlib import Path

import torch
import yaml
from PIL import Image

from helpers import REPO
from helpers.fixture_edits import edit_shard, truncate
from helpers.format_fixtures import BUILDERS
from helpers.replication_fixture import FIXTURE, write_metrics
from hypvl.cli import main
from hypvl.config import DEFAULT_CONFIG
from hypvl.data.formats.shards import iter_tar_samples
from hypvl.models.build import build_model
from hypvl.models.checkpoints import save_checkpoint
from hypvl.spec.load import load_spec

# --------------------------------------------------------------------------- commands


def synthesize(tmp_path, config):
    """`hypvl synthesize` reading the config file `config` (the config is read before any work)."""
    out = tmp_path / "out"
    return ["synthesize", "--configfile", str(config), "--out", str(out), "--only", "evaluation"], [out]


def compare(tmp_path):
    """`hypvl compare` of the replication fixture copied to tmp_path, its metric JSONs written."""
    if not (tmp_path / "replication").exists():
        shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
        write_metrics(tmp_path, "smoke")
    out = tmp_path / "table1.csv"
    argv = ["compare", "--spec", str(tmp_path / "replication" / "tiny.yaml"), "--table", "table1",
            "--metrics-dir", str(tmp_path / "results" / "smoke" / "metrics"), "--scale", "smoke", "--out", str(out)]
    return argv, [out]


def data_check(fmt, path, *extra):
    return ["data", "check", fmt, str(path), *extra], []


def evaluate(tmp_path, checkpoint):
    out = tmp_path / "metrics"
    return ["evaluate", "zeroshot", "--experiment", "e", "--checkpoint", str(checkpoint), "--out-dir", str(out),
            "--tasks", "zs_cifar10"], [out / "zs_cifar10.json"]


# --------------------------------------------------------------------------- inputs


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def spec_case(change, problem):
    """A replication-spec case: `change(document)` applied to the fixture spec."""
    def build(tmp_path):
        argv, outs = compare(tmp_path)
        path = tmp_path / "replication" / "tiny.yaml"
        document = yaml.safe_load(path.read_text())
        change(document)
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        return argv, path, problem, outs
    return build


def fixture_text_case(relative: str, edit, problem):
    """A `hypvl compare` case: `edit(text)` applied to one file of the replication fixture (`relative` to it)."""
    def build(tmp_path):
        argv, outs = compare(tmp_path)
        path = tmp_path / relative
        path.write_text(edit(path.read_text()))
        return argv, path, problem, outs
    return build


def spec_text_case(edit, problem):
    return fixture_text_case("replication/tiny.yaml", edit, problem)


def expected_case(edit, problem):
    return fixture_text_case("expected/tiny/table1.csv", edit, problem)


def metrics_case(edit, problem):
    """A metric-JSON case: `edit(text)` applied to tiny_clip's zs_cifar10.json."""
    return fixture_text_case("results/smoke/metrics/tiny_clip/zs_cifar10.json", edit, problem)


def metrics_record_case(change, problem):
    def edit(text):
        record = json.loads(text)
        change(record)
        return json.dumps(record)
    return metrics_case(edit, problem)


def config_case(text, problem):
    def build(tmp_path):
        path = write(tmp_path / "config.yaml", text)
        argv, outs = synthesize(tmp_path, path)
        return argv, path, problem, outs
    return build


def format_case(fmt, corrupt, problem, extra=()):
    """A data-format case: `corrupt(fixture path)` applied to the format's fixture, read by `data check`."""
    def build(tmp_path):
        path, _, _ = BUILDERS[fmt](tmp_path)
        named = corrupt(path)
        argv, outs = data_check(fmt, path, *extra)
        return argv, named if isinstance(named, Path) else path, problem, outs
    return build


def first_key(shard):
    return next(iter_tar_samples(shard))[0]


def shard_member_case(fmt, edit, problem):
    def corrupt(shard):
        edit_shard(shard, first_key(shard), edit)
    return format_case(fmt, corrupt, problem)


def tiny_checkpoint(path):
    model_cfg = yaml.safe_load(DEFAULT_CONFIG.read_text())["model"]
    backbone = next(iter(model_cfg["backbones"]))
    recipe = {"method": "clip", "backbone": backbone, "overrides": {}, "model_cfg": model_cfg, "experiment": "e"}
    save_checkpoint(path, build_model("clip", backbone, model_cfg), recipe, step=1)
    return torch.load(path, weights_only=True)


def checkpoint_case(make, problem):
    def build(tmp_path):
        path = tmp_path / "checkpoint.pt"
        make(path)
        argv, outs = evaluate(tmp_path, path)
        return argv, path, problem, outs
    return build


def zero_shot_on_neither_layout(tmp_path):
    """`hypvl evaluate zeroshot` on a cifar10 test folder holding a CLIP_benchmark shard but no nshards.txt."""
    path, _, _ = BUILDERS["clip_benchmark_wds"](tmp_path / "data" / "eval" / "classification")
    path.rename(path.with_name("cifar10"))
    folder = path.with_name("cifar10") / "test"
    (folder / "nshards.txt").unlink()
    tiny_checkpoint(tmp_path / "checkpoint.pt")
    argv, outs = evaluate(tmp_path, tmp_path / "checkpoint.pt")
    argv += ["--config-json", json.dumps({"data_dir": str(tmp_path / "data")})]
    return argv, folder, "neither layout of a classification split .*CLIP_benchmark's webdataset.* image folder", outs


def wrong_shape(path):
    blob = tiny_checkpoint(path)
    key = next(k for k, v in blob["model"].items() if v.dim() == 2)
    blob["model"][key] = torch.zeros(3, 3)
    torch.save(blob, path)


def without_recipe(path):
    blob = tiny_checkpoint(path)
    del blob["recipe"]
    torch.save(blob, path)


def zero_sample_corpus(tmp_path):
    """`hypvl train` on a corpus whose only shard holds no sample: refused, never an endless loop."""
    spec = load_spec("replication/hycoclip.yaml")
    experiment = next(e for e in spec.experiments.values() if e.source == "train" and e.method == "clip")
    corpus = yaml.safe_load(DEFAULT_CONFIG.read_text())["corpora"][experiment.data]
    shard = tmp_path / "data" / corpus / "00000.tar"
    shard.parent.mkdir(parents=True)
    tarfile.open(shard, "w").close()
    config = write(tmp_path / "config.yaml", yaml.safe_dump({"data_dir": str(tmp_path / "data")}))
    experiment = experiment.id
    out = tmp_path / "model"
    argv = ["train", "--spec", "replication/hycoclip.yaml", "--experiment", experiment, "--configfile",
            str(config), "--out", str(out), "--quiet"]
    return argv, shard.parent, "hold no samples", [out / "checkpoint.pt"]


TRAIN_ROWS = "positive,negative\n" + "an animal => a dog => a small dog => a small dog on the beach,a vehicle => a cat" \
    " => a large dog => a small dog in the snow\n"


def finetune_case(overrides, rows, problem, named="csv"):
    """`hypvl finetune` of a radial_ft experiment (the fixture spec's tiny_clip as base) with `overrides` on a train
    CSV of `rows` (text after the header); `named`: the file the line must name (`csv` or `spec`)."""
    def build(tmp_path):
        shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
        spec = tmp_path / "replication" / "tiny.yaml"
        document = yaml.safe_load(spec.read_text())
        document["experiments"]["tiny_ft"] = {"method": "radial_ft", "backbone": "vit_s16", "data": "hierarcaps_train",
                                              "source": "train", "overrides": {"base": "tiny_clip", **overrides}}
        spec.write_text(yaml.safe_dump(document, sort_keys=False))
        tiny_checkpoint(tmp_path / "base.pt")
        csv = write(tmp_path / "train.csv", TRAIN_ROWS + rows)
        out = tmp_path / "model"
        argv = ["finetune", "--spec", str(spec), "--experiment", "tiny_ft", "--base-checkpoint",
                str(tmp_path / "base.pt"), "--train-csv", str(csv), "--out", str(out), "--quiet"]
        return argv, csv if named == "csv" else spec, problem, [out / "checkpoint.pt"]
    return build


def manifest_case(entry, problem):
    def build(tmp_path):
        path = write(tmp_path / "sources.yaml", yaml.safe_dump({"datasets": {"x": entry}}))
        dest = tmp_path / "dest"
        return ["acquire", "x", "--dest", str(dest), "--sources", str(path)], path, problem, [dest]
    return build


def image_case(tmp_path):
    """An image folder whose first image is a truncated JPEG."""
    path, _, _ = BUILDERS["imagefolder"](tmp_path)
    image = min(p for p in path.rglob("*") if p.suffix in (".jpg", ".png", ".jpeg"))
    truncate(image, 0.3)
    argv, outs = data_check("imagefolder", path)
    return argv, image, "does not decode", outs


def probe_case(name, splits, problem, named):
    """`hypvl probe-splits NAME` on a source image folder holding `splits` (split -> class folders, one image each);
    `named(source)` is the file the line must name."""
    def build(tmp_path):
        source = tmp_path / "source"
        for split, classes in splits.items():
            for label in classes:
                (source / split / label).mkdir(parents=True, exist_ok=True)
                Image.new("RGB", (4, 4)).save(source / split / label / "0.png")
        dest = tmp_path / "probe"
        argv = ["probe-splits", name, "--source", str(source), "--dest", str(dest)]
        return argv, named(source), problem, [dest, tmp_path / "probe.partial"]
    return build


# --------------------------------------------------------------------------- the corpus


def refused_in_one_line(build, tmp_path, capsys, monkeypatch) -> None:
    """Run the case `build` makes through `hypvl.cli.main` and check its refusal (this module's docstring)."""
    monkeypatch.chdir(REPO)
    argv, named, problem, outputs = build(tmp_path)
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code != 0
    assert len(lines) == 1 and "Traceback" not in err, err
    assert str(named) in lines[0] and re.search(problem, lines[0]), lines[0]
    assert not any(path.exists() for path in outputs)
