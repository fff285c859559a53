"""Weights from outside as DAG inputs: each spec source resolves to one entry of the weights manifest; fetching
goes through hypvl.acquire.fetch (a published digest is verified, an unpublished one is said to be unverified and
recorded, a mismatch or a truncated download leaves nothing); `hypvl import-weights` refuses, in one line naming
the source and with nothing written, an unrecognised file, a digest that differs from the record, weights of
another architecture and a model the libraries cannot build."""

import hashlib
import io
import json
import logging
import re
from pathlib import Path

import pytest
import torch
import yaml

from helpers import REPO
from helpers.acquire import FixtureOpener
from helpers.library import open_clip_folder, transformers_folder
from helpers.models import TINY
from hypvl.cli import main
from hypvl.acquire.fetch import ChecksumMismatch, fetch
from hypvl.acquire.manifest import load_sources
from hypvl.errors import InputError
from hypvl.models.build import build_model
from hypvl.models.checkpoints import load_checkpoint, read_checkpoint, save_checkpoint
from hypvl.outside.sources import outside_weights, weights_manifest
from hypvl.outside.standins import write_released
from hypvl.spec.load import load_all_specs

PAYLOAD = (REPO / "tests" / "data" / "acquire" / "payload.txt").read_bytes()
URL = "https://fixtures.invalid/payload.txt"


def test_sources_resolve_to_one_manifest_entry_and_folder():
    meru = outside_weights("released:meru_vit_s")
    assert (meru.entry, meru.folder, meru.library, meru.checkpoint) == (
        "released:meru_vit_s", "released/meru_vit_s", None, "meru_vit_s.pth")
    laion = outside_weights("pretrained:laion/CLIP-ViT-B-32-laion2B-s34B-b79K")
    assert (laion.entry, laion.library, laion.architecture) == (
        "open_clip:laion/CLIP-ViT-B-32-laion2B-s34B-b79K", "open_clip", "clip")
    authors = outside_weights(laion.source, {"laion/CLIP-ViT-B-32-laion2B-s34B-b79K": "transformers"})
    assert authors.folder == "transformers/laion/CLIP-ViT-B-32-laion2B-s34B-b79K"  # the other reading, fetched apart
    assert outside_weights("pretrained:kakaobrain/align-base").architecture == "align"
    for source, problem in (("released:meru_vit_xl", "has no entry 'released:meru_vit_xl'"),
                            ("pretrained:someone/unknown", "does not know the model 'someone/unknown'"),
                            ("downloaded:x", "is not train, released:<name> or pretrained:<hub id>")):
        with pytest.raises(InputError, match=re.escape(problem)):
            outside_weights(source)
    with pytest.raises(InputError, match="has no entry 'open_clip:kakaobrain/align-base'"):
        outside_weights("pretrained:kakaobrain/align-base", {"kakaobrain/align-base": "open_clip"})


def test_the_manifest_serves_every_source_of_the_specs_and_invents_no_digest():
    specs = load_all_specs(REPO / "replication", REPO / "expected")
    sources = {e.source for spec in specs.values() for e in spec.experiments.values() if e.source != "train"}
    assert len(sources) == 17  # MERU's six, HyCoCLIP's six, the HierarCaps paper's five
    for source in sources:
        outside_weights(source)
    entries = weights_manifest()
    for name, entry in entries.items():
        for item in entry.get("files", []):
            assert item["url"].startswith("https://") and item["sha256"] is None, name  # none could be established
        if "hf_snapshot" in entry:
            assert entry["hf_snapshot"]["repo_type"] == "model" and name.split(":", 1)[1] == entry["hf_snapshot"][
                "repo"], name


def manifest(tmp_path, sha256=None):
    """A weights manifest whose released checkpoint is served by the test opener."""
    path = tmp_path / "weights.yaml"
    path.write_text(yaml.safe_dump({"datasets": {"released:fixture": {
        "files": [{"url": URL, "path": "fixture.pth", "sha256": sha256,
                   **({"checksum_source": "a made-up digest"} if sha256 else {})}]}}}))
    return load_sources(path)


def test_an_unpinned_download_says_it_is_unverified_and_is_recorded(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="hypvl"):
        [path] = fetch("released:fixture", tmp_path, opener=FixtureOpener(), sources=manifest(tmp_path))
    digest = hashlib.sha256(PAYLOAD).hexdigest()
    assert re.search(rf"fixture\.pth: no published checksum; sha256 {digest} recorded .*unverified", caplog.text)
    assert (tmp_path / "SHA256SUMS").read_text() == f"{digest}  fixture.pth\n"
    path.write_bytes(PAYLOAD + b"changed upstream")
    with pytest.raises(ChecksumMismatch, match="fixture.pth"):
        fetch("released:fixture", tmp_path, opener=FixtureOpener(), sources=manifest(tmp_path))


def test_a_checksum_mismatch_is_refused_with_nothing_written(tmp_path):
    dest = tmp_path / "dest"
    with pytest.raises(ChecksumMismatch, match=r"fixture\.pth .*sha256 is .*expected 0{64}"):
        fetch("released:fixture", dest, opener=FixtureOpener(), sources=manifest(tmp_path, "0" * 64))
    assert list(dest.iterdir()) == []


class ShortResponse(io.BytesIO):
    """A response that ends early: fewer bytes than its Content-Length says."""

    status = 200

    def __init__(self):
        super().__init__(PAYLOAD[:100])
        self.headers = {"Content-Length": str(len(PAYLOAD))}


def test_a_truncated_download_is_never_a_finished_file(tmp_path):
    dest = tmp_path / "dest"
    with pytest.raises(InputError, match=rf"{URL}: download failed after 3 attempts \(connection closed after 100 of "
                                         rf"{len(PAYLOAD)} bytes\)"):
        fetch("released:fixture", dest, opener=lambda request: ShortResponse(), sources=manifest(tmp_path))
    assert not (dest / "fixture.pth").exists() and not (dest / "SHA256SUMS").exists()


def test_a_hub_model_repository_is_fetched_as_a_model_and_every_file_recorded(tmp_path, caplog):
    entry = weights_manifest()["open_clip:laion/CLIP-ViT-B-32-laion2B-s34B-b79K"]
    calls = []

    def snapshot(**kwargs):  # huggingface_hub.snapshot_download's part, served locally
        calls.append(kwargs)
        for name in kwargs["allow_patterns"]:
            (Path(kwargs["local_dir"]) / name).write_text(name)

    with caplog.at_level(logging.WARNING, logger="hypvl"):
        paths = fetch("laion", tmp_path, sources={"laion": entry}, hub_download=snapshot,
                      hub_resolve=lambda repo, revision, repo_type: "c" * 40)
    assert calls[0]["repo_type"] == "model" and calls[0]["repo_id"] == "laion/CLIP-ViT-B-32-laion2B-s34B-b79K"
    assert calls[0]["revision"] == "c" * 40  # `main` as it was on the first fetch, recorded in HUB_COMMITS
    again = fetch("laion", tmp_path, sources={"laion": entry}, hub_download=snapshot)  # into the same folder
    assert again == paths and len((tmp_path / "SHA256SUMS").read_text().splitlines()) == 2  # records not recorded
    assert sorted(path.name for path in paths) == ["open_clip_config.json", "open_clip_pytorch_model.bin"]
    assert len((tmp_path / "SHA256SUMS").read_text().splitlines()) == 2 and caplog.text.count("unverified") == 2


# --------------------------------------------------------------------------- hypvl import-weights


@pytest.fixture
def tiny_config(tmp_path):
    """A config whose model section is the tests' tiny architecture (ViT-S/16 realised as one block)."""
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump({"model": TINY}))
    return path


def released_folder(tmp_path, method="meru", config=TINY):
    """MERU's released ViT-S/16 checkpoint as a stand-in folder, and the model it holds."""
    torch.manual_seed(0)
    model = build_model(method, "vit_s16", config).eval()
    save_checkpoint(tmp_path / "ours.pt", model, {"method": method, "backbone": "vit_s16", "model_cfg": config},
                    step=0)
    folder = tmp_path / "weights" / "released" / "meru_vit_s"
    write_released(tmp_path / "ours.pt", folder, "meru_vit_s.pth")
    return model, folder


def import_weights(experiment, weights, out, config, spec="meru"):
    return main(["import-weights", "--spec", str(REPO / "replication" / f"{spec}.yaml"), "--experiment", experiment,
                 "--weights", str(weights), "--out", str(out), "--configfile", str(config)])


def test_import_weights_writes_the_checkpoint_and_records_the_weights(tmp_path, tiny_config):
    model, folder = released_folder(tmp_path)
    out = tmp_path / "models" / "meru_released_meru_vits" / "checkpoint.pt"
    assert import_weights("meru_released_meru_vits", folder, out, tiny_config) == 0
    imported, recipe = load_checkpoint(out)
    images = torch.rand(2, 3, 16, 16)
    assert torch.equal(imported.encode_image(images), model.encode_image(images))
    digest = hashlib.sha256((folder / "meru_vit_s.pth").read_bytes()).hexdigest()
    assert recipe["source"] == "released:meru_vit_s" and recipe["experiment"] == "meru_released_meru_vits"
    assert recipe["weights"] == {"path": str(folder), "sha256": {"meru_vit_s.pth": digest},
                                 "verified": {"meru_vit_s.pth": False}, "standin": True}
    assert read_checkpoint(out)["step"] == 0


def refused(capsys, code, source, problem, *outputs):
    """One line on stderr naming `source` and matching `problem`, a non-zero exit, and none of `outputs`."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code != 0 and len(lines) == 1 and "Traceback" not in err, err
    assert source in lines[0] and re.search(problem, lines[0]), lines[0]
    assert not any(path.exists() for path in outputs)


def truncate(folder):
    checkpoint = folder / "meru_vit_s.pth"
    checkpoint.write_bytes(checkpoint.read_bytes()[: checkpoint.stat().st_size // 2])


WIDER = {**TINY, "backbones": {"vit_s16": {"patch": 8, "width": 32, "depth": 1, "heads": 2}}}
SPOILED = {  # case -> (the stand-in's architecture, what spoils its folder, the problem named)
    "unrecognised_file": (TINY, lambda folder: (folder / "extra.pkl").write_bytes(b"\x80\x04 not listed"),
                          r"holds files the manifest does not list .*: extra\.pkl"),
    "differs_from_record": (TINY, lambda folder: (folder / "SHA256SUMS").write_text(f"{'1' * 64}  meru_vit_s.pth\n"),
                            r"meru_vit_s\.pth: sha256 is [0-9a-f]{64}, expected 1{64}"),
    "another_architecture": (WIDER, lambda folder: None,
                             r"meru_vit_s\.pth: checkpoint does not fit the model: visual\.vit\.cls_token has shape "
                             r"\(1, 1, 32\), the model expects \(1, 1, 16\)"),
    "truncated_checkpoint": (TINY, truncate, r"meru_vit_s\.pth: not a readable checkpoint"),
}


@pytest.mark.parametrize("case", sorted(SPOILED))
def test_a_spoiled_released_folder_is_refused_with_nothing_written(tmp_path, tiny_config, capsys, case):
    config, spoil, problem = SPOILED[case]
    _, folder = released_folder(tmp_path, config=config)
    spoil(folder)
    out = tmp_path / "checkpoint.pt"
    refused(capsys, import_weights("meru_released_meru_vits", folder, out, tiny_config), "released:meru_vit_s",
            problem, out)


def test_a_folder_holding_another_architecture_is_refused(tmp_path, tiny_config, capsys):
    *_, folder = transformers_folder(tmp_path, "clip")
    out = tmp_path / "checkpoint.pt"
    code = import_weights("hcaps_align", folder, out, tiny_config, spec="hierarcaps")
    refused(capsys, code, "pretrained:kakaobrain/align-base", "holds a 'clip' model, the manifest declares 'align'",
            out)


def test_a_model_the_installed_open_clip_does_not_know_is_refused_naming_the_source(tmp_path, tiny_config, capsys):
    _, folder = open_clip_folder(tmp_path)
    config = json.loads((folder / "open_clip_config.json").read_text())
    config["model_cfg"]["vision_cfg"] = {"timm_model_name": "vit_no_such_model", "image_size": 32}
    (folder / "open_clip_config.json").write_text(json.dumps(config))
    out = tmp_path / "checkpoint.pt"
    code = import_weights("hcaps_openclip_b", folder, out, tiny_config, spec="hierarcaps")
    refused(capsys, code, "pretrained:laion/CLIP-ViT-B-32-laion2B-s34B-b79K", "does not load.*vit_no_such_model",
            out)


def test_fetch_weights_reads_the_packaged_weights_manifest_by_default(capsys):
    """`hypvl fetch-weights` is `hypvl acquire` over the weights manifest, which the workflow never names (its path
    moves with the checkout); `hypvl acquire` keeps the datasets' manifest."""
    assert main(["fetch-weights", "--list"]) == 0
    listed = [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == list(weights_manifest()) and "transformers:openai/clip-vit-base-patch32" in listed
    assert main(["acquire", "--list"]) == 0
    datasets = [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()]
    assert not set(datasets) & set(listed) and "imagenet" in datasets
