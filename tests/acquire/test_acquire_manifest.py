"""The acquisition manifest (src/hypvl/acquire/sources.yaml): https only, every pinned digest and commit sourced, paths
inside the destination, every dataset covered, and `hypvl acquire --list` saying how each is verified."""

import re

import pytest
import yaml

from helpers.acquire import CATALOG, FIXTURES
from hypvl.acquire import manifest
from hypvl.acquire.fetch import fetch
from hypvl.acquire.manifest import load_sources
from hypvl.errors import InputError


@pytest.mark.parametrize("entry, problem", [
    ({"files": [{"url": "http://x.invalid/a", "path": "a", "sha256": None}]}, "http://x.invalid/a is not an https URL"),
    ({"files": [{"url": "https://x.invalid/a", "path": "a", "sha256": "ab" * 32}]},
     "file 0 pins a digest without its checksum_source"),
    ({"manual": True, "instructions": "get it", "expected": [{"path": "a", "md5": "ab" * 16}]},
     "expected file 0 pins a digest without its checksum_source"),
    ({"hf_snapshot": {"repo": "r", "revision": "ab" * 20, "path": "."}},
     f"hf_snapshot pins commit {'ab' * 20} without its revision_source"),
], ids=["plain_http", "digest_without_source", "manual_digest_without_source", "commit_without_source"])
def test_the_manifest_pins_only_sourced_values_over_https(tmp_path, entry, problem):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"datasets": {"x": entry}}))
    with pytest.raises(InputError, match=re.escape(f"{bad}: dataset 'x': {problem}")):
        load_sources(bad)


def test_unknown_dataset_and_bad_manifest(tmp_path):
    with pytest.raises(InputError, match="unknown dataset 'nope'"):
        fetch("nope", tmp_path, sources=load_sources(FIXTURES / "sources.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"datasets": {"x": {"files": [{"url": "https://x.invalid/u", "path": "p"}]}}}))
    with pytest.raises(InputError, match=r"bad\.yaml: dataset 'x': file 0 needs .*sha256"):
        load_sources(bad)
    bad.write_text("datasets:\n  z:\n    files: [{url: https://x.invalid/u, path: p, sha256: " + "0" * 64 + "}]\n")
    with pytest.raises(InputError, match="'z': file 0 sha256 0 is not 64 hex digits"):
        load_sources(bad)  # unquoted, YAML reads an all-digit checksum as an integer
    bad.write_text(yaml.safe_dump({"datasets": {"y": {"manual": True, "expected": ["a"]}}}))
    with pytest.raises(InputError, match="'y': manual dataset without instructions"):
        load_sources(bad)


@pytest.mark.parametrize("entry, what", [
    ({"files": [{"url": "https://x.invalid/u", "path": "../outside.tar", "sha256": None}]}, "file 0 path '../outside.tar'"),
    ({"files": [{"url": "https://x.invalid/u", "path": "/etc/passwd", "sha256": None}]}, "file 0 path '/etc/passwd'"),
    ({"files": [{"url": "https://x.invalid/u", "path": "a.tar", "sha256": None, "unpack": True, "unpack_to": "x/../../up"}]},
     "file 0 unpack_to 'x/../../up'"),
    ({"hf_snapshot": {"repo": "r", "revision": "main", "path": ".."}}, "hf_snapshot path '..'"),
    ({"manual": True, "instructions": "get it", "expected": ["ok", "../../leak"]}, "expected file 1 '../../leak'"),
], ids=["file_parent", "file_absolute", "unpack_to_parent", "snapshot_parent", "manual_expected_parent"])
def test_manifest_paths_must_stay_inside_the_destination(tmp_path, entry, what):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"datasets": {"x": entry}}))
    with pytest.raises(InputError, match=re.escape(f"{bad}: dataset 'x': {what} must be a relative path inside "
                                                   "the destination folder")):
        load_sources(bad)


def test_shipped_manifest_covers_every_dataset():
    sources = load_sources()
    classification = {p.stem for p in CATALOG.glob("*.yaml")}
    assert len(classification) == 20 and classification <= sources.keys()
    others = {"coco_val2017", "flickr30k", "grit", "redcaps", "cc3m", "vl_checklist",
              "vg_attribution", "hierarcaps", "wordnet_isa", "hyperlex", "breeds"}
    assert others <= sources.keys()
    assert {n for n, e in sources.items() if e.get("manual")} == {"cars", "resisc45", "imagenet"}
    # https only, and every digest and commit names where it was published (load_sources refuses anything else);
    # the published ones found for issue 14 stay pinned
    checksummed = {name for name, entry in sources.items()
                   if any(item["sha256"] or item.get("md5") for item in entry.get("files", []))}
    assert checksummed == {"coco_val2017", "flickr30k", "redcaps", "cc3m", "cub", "sun397", "clevr", "vl_checklist"}
    assert {name for name, entry in sources.items() if manifest.pinned(entry.get("hf_snapshot", {}).get("revision"))} \
        == {"country211", "pcam", "sst2"}
    assert all(item.get("md5") for item in manifest.expected_files(sources["imagenet"]))


def test_the_list_says_how_each_dataset_is_verified(capsys):
    from hypvl.cli import main

    assert main(["acquire", "--list", "--sources", str(FIXTURES / "sources.yaml")]) == 0
    trust = dict(line.split("\t")[:2] for line in capsys.readouterr().out.splitlines())
    assert trust["published"] == "1/1 files checksummed" and trust["unpublished"] == "0/1 files checksummed"
    assert trust["hub"] == "Hub 'main' (pinned on first fetch)" and trust["hub_pinned"] == "Hub commit pinned"
    assert trust["licensed"] == "manual"
