"""Provenance: what every metrics JSON records about the config, code, packages, data and checkpoint behind its
numbers, and which experiment and seed a training records."""

import hashlib
import json
import logging
import subprocess
from pathlib import Path

import pytest
import torch
import yaml

from helpers import REPO
from hypvl import provenance as provenance_module
from hypvl.cli import main
from hypvl.config import DEFAULT_CONFIG
from hypvl.acquire.fingerprint import data_manifest_hash
from hypvl.worlds.smoke.classification import write_classification_set
from hypvl.worlds.smoke.settings import WorldSettings
from hypvl.errors import InputError
from hypvl.models.build import build_model
from hypvl.models.checkpoints import save_checkpoint
from hypvl.provenance import checkpoint_record, config_differences, config_hash, git_state
from hypvl.spec.load import load_spec
from hypvl.train.commands import experiment_from_spec

DEFAULT = yaml.safe_load(DEFAULT_CONFIG.read_text())


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _one_set_world(tmp_path, sets: tuple[str, ...]) -> tuple[Path, Path, Path]:
    """Smoke classification `sets` of one image a class, a CLIP checkpoint of experiment `e` (3 steps of the default
    train section) and a config reading them: (data folder, checkpoint, config file)."""
    data = tmp_path / "data"
    world = WorldSettings(image_size=32, per_class=1, probe_train_per_class=1, probe_val_per_class=1)
    for name in sets:
        write_classification_set(world, name, data / DEFAULT["eval"]["classification_dir"])
    (data / "manifest.json").write_text('{"world": "one set"}')
    model_cfg, train_cfg = DEFAULT["model"], {**DEFAULT["train"], "steps": 3}
    recipe = {"method": "clip", "backbone": "vit_s16", "overrides": {}, "model_cfg": model_cfg,
              "train_cfg": train_cfg, "seed": 0, "experiment": "e"}
    checkpoint = tmp_path / "checkpoint.pt"
    save_checkpoint(checkpoint, build_model("clip", "vit_s16", model_cfg), recipe, step=3)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"data_dir": str(data)}))
    return data, checkpoint, config


def test_an_evaluation_says_each_task_as_it_is_written(tmp_path, caplog):
    """A paper-scale evaluation job runs for hours: its log gets a line as each task's JSON is written (its metrics,
    samples and seconds), so `tail -f` shows how far it is."""
    _, checkpoint, config = _one_set_world(tmp_path, ("cifar10", "mnist"))
    with caplog.at_level(logging.INFO, logger="hypvl"):
        assert main(["evaluate", "zeroshot", "--experiment", "e", "--checkpoint", str(checkpoint), "--out-dir",
                     str(tmp_path / "metrics"), "--tasks", "zs_cifar10", "zs_mnist", "--configfile", str(config)]) == 0
    lines = [record.getMessage() for record in caplog.records if " (task " in record.getMessage()]
    assert len(lines) == 2
    for number, (line, task) in enumerate(zip(lines, ("zs_cifar10", "zs_mnist")), 1):
        written = json.loads((tmp_path / "metrics" / f"{task}.json").read_text())
        metrics = ", ".join(f"{name} {value:.4g}" for name, value in list(written["metrics"].items())[:3])
        assert line.startswith(f"e {task} (task {number} of 2): {metrics}")
        assert f"; {written['n_samples']} samples, " in line and line.endswith(" s")


def test_a_metrics_json_records_run_config_code_data_and_checkpoint(tmp_path):
    """`hypvl evaluate` on a checkpoint and a one-set data folder: the JSON's provenance holds the run config (model
    and train sections of the checkpoint, the evaluation's sections) and its hash, the git commit and dirty flag,
    and the sha256 of the data manifest and the checkpoint file, each recomputed here by hand; the entries of the
    checkpoint's `train.steps_for` matching its experiment apart from the run config (none for `e`); and the model
    it measured."""
    data, checkpoint, config = _one_set_world(tmp_path, ("cifar10",))
    model_cfg, train_cfg = DEFAULT["model"], {**DEFAULT["train"], "steps": 3}
    assert main(["evaluate", "zeroshot", "--experiment", "e", "--checkpoint", str(checkpoint), "--out-dir",
                 str(tmp_path / "metrics"), "--tasks", "zs_cifar10", "--configfile", str(config)]) == 0
    record = json.loads((tmp_path / "metrics" / "zs_cifar10.json").read_text())
    provenance = record["provenance"]
    neutral = ("steps_for", "telemetry", "checkpoint_every", "cache_decoded")  # apart: steps_for; no number: the rest
    shared = {k: v for k, v in train_cfg.items() if k not in neutral}
    run = {"scale": "smoke", "model": model_cfg, "train": shared,
           "cpu_code_path": DEFAULT["cpu_code_path"], "eval": DEFAULT["eval"]}
    assert record["scale"] == "smoke" and provenance["run_config"] == run
    assert provenance["run_config_hash"] == config_hash(run)
    assert provenance["checkpoint_sha256"] == sha256(checkpoint) and provenance["checkpoint"] == str(checkpoint)
    assert provenance["model"] == {"experiment": "e", "method": "clip", "backbone": "vit_s16"}
    assert provenance["steps_for"] == {}  # poin_grid_* does not match `e`
    manifest_line = f"manifest.json\0{sha256(data / 'manifest.json')}\n".encode()
    assert provenance["data_manifest_hash"] == hashlib.sha256(manifest_line).hexdigest()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert (provenance["git_commit"], provenance["git_dirty"]) == (head.strip(), bool(status.strip()))
    assert set(provenance["packages"]) == {"torch", "timm", "open_clip", "numpy", "hypvl"}


def test_a_checkpoints_sha256_is_recorded_when_written_and_trusted_only_while_the_file_is_unchanged(
        tmp_path, monkeypatch):
    checkpoint = tmp_path / "checkpoint.pt"
    save_checkpoint(checkpoint, torch.nn.Linear(2, 2), {"experiment": "e"}, step=0)
    record = json.loads((tmp_path / "checkpoint.pt.sha256.json").read_text())
    assert record == {"sha256": sha256(checkpoint), "bytes": checkpoint.stat().st_size,
                      "mtime_ns": checkpoint.stat().st_mtime_ns}
    hashed = []
    monkeypatch.setattr(provenance_module, "file_digest", lambda path: hashed.append(path) or sha256(Path(path)))
    assert checkpoint_record(checkpoint)["checkpoint_sha256"] == record["sha256"] and hashed == []
    torch.save({"model": {}}, checkpoint)  # replaced by other means: another size, another time
    assert checkpoint_record(checkpoint)["checkpoint_sha256"] == sha256(checkpoint) != record["sha256"]
    assert hashed == [checkpoint]
    (tmp_path / "checkpoint.pt.sha256.json").write_text("{not json")
    assert checkpoint_record(checkpoint)["checkpoint_sha256"] == sha256(checkpoint) and len(hashed) == 2


def test_the_data_manifest_hash_covers_the_manifests_and_acquisition_records_only(tmp_path):
    assert data_manifest_hash(tmp_path) is None
    (tmp_path / "manifest.json").write_text("{}")
    records = [tmp_path / "eval" / "coco" / "SHA256SUMS", tmp_path / "eval" / "classification" / "cifar10" / "HUB_COMMITS"]
    for path in records:
        path.parent.mkdir(parents=True)
        path.write_text(f"{'a' * 64}  x\n" if path.name == "SHA256SUMS" else f"{'b' * 40}  someone/repo\n")
    deep = tmp_path / "a" / "b" / "c" / "d" / "SHA256SUMS"  # deeper than any dataset folder: not read
    deep.parent.mkdir(parents=True)
    deep.write_text("ignored")
    (tmp_path / "eval" / "coco" / "captions.json").write_text("data, not a manifest")
    lines = sorted((path.relative_to(tmp_path).as_posix(), sha256(path)) for path in [tmp_path / "manifest.json",
                                                                                      *records])
    oracle = hashlib.sha256("".join(f"{name}\0{digest}\n" for name, digest in lines).encode()).hexdigest()
    assert data_manifest_hash(tmp_path) == oracle
    before = data_manifest_hash(tmp_path)
    deep.write_text("still ignored")
    (tmp_path / "eval" / "coco" / "captions.json").write_text("other data")
    assert data_manifest_hash(tmp_path) == before
    records[0].write_text(f"{'c' * 64}  x\n")
    assert data_manifest_hash(tmp_path) != before


def test_git_state_reads_the_commit_and_whether_tracked_files_changed():
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True)
    status = subprocess.run(["git", "diff", "HEAD", "--quiet"], cwd=REPO, check=False)  # exit 1: a tracked change
    assert git_state() == (head.stdout.strip(), status.returncode == 1)


def test_config_differences_name_each_changed_setting():
    one = {"train": {"steps": 500, "lr": 5e-4}, "model": {"embed_dim": 64}, "eval": {"device": "cpu"}}
    two = {"train": {"steps": 400, "lr": 5e-4}, "model": {"embed_dim": 64}}
    assert config_differences(one, two) == ['eval.device: "cpu" vs "absent"', "train.steps: 500 vs 400"]
    assert config_differences(one, one) == []


def test_training_another_seed_records_the_seed_variant():
    """`hypvl train --seed N` trains the declared experiment with seed N under the id <experiment>__seed<N>; the
    declared seed keeps the experiment's own id."""
    spec = Path("replication/hycoclip.yaml")
    declared = experiment_from_spec(REPO / spec, "hyco_clip_vits_grit")
    assert declared["id"] == "hyco_clip_vits_grit" and declared["seed"] == 0
    assert experiment_from_spec(REPO / spec, "hyco_clip_vits_grit", 0) == declared
    variant = experiment_from_spec(REPO / spec, "hyco_clip_vits_grit", 2)
    assert variant == {**declared, "id": "hyco_clip_vits_grit__seed2", "seed": 2}


def test_a_declared_experiment_may_not_look_like_a_seed_variant(tmp_path):
    document = yaml.safe_load((REPO / "tests" / "data" / "replication" / "replication" / "tiny.yaml").read_text())
    document["experiments"]["tiny_clip__seed1"] = document["experiments"]["tiny_clip"]
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(InputError, match=r"tiny\.yaml: experiments\.tiny_clip__seed1: '__seed' is reserved"):
        load_spec(path, REPO / "tests" / "data" / "replication" / "expected")
