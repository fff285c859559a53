"""Acquisition: resumable, checksummed downloads and manual steps, served by an injected
opener from tests/data/acquire (never the network)."""

import hashlib
import json
import logging
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from helpers.acquire import FixtureOpener, FixtureResponse, FIXTURES, PREFIX
from hypvl.acquire.fetch import ChecksumMismatch, ManualStepRequired, fetch
from hypvl.acquire.manifest import load_sources
from hypvl.errors import InputError

PAYLOAD = (FIXTURES / "payload.txt").read_bytes()


@pytest.fixture()
def sources():
    return load_sources(FIXTURES / "sources.yaml")


def test_fetch_verifies_published_checksum(tmp_path, sources):
    opener = FixtureOpener()
    [path] = fetch("published", tmp_path, opener=opener, sources=sources)
    assert path.read_bytes() == PAYLOAD
    assert not path.with_name("payload.txt.part").exists()
    assert not (tmp_path / "SHA256SUMS").exists()  # published checksums are not re-recorded
    fetch("published", tmp_path, opener=opener, sources=sources)
    assert opener.ranges == [None]  # the finished file is verified, not downloaded again


def test_interrupted_download_resumes_with_range(tmp_path, sources):
    url = PREFIX + "payload.txt"
    opener = FixtureOpener(cuts={url: 1000})
    part = tmp_path / "payload.txt.part"
    with pytest.raises(InputError, match=re.escape(f"{url}: download failed after 1 attempts (connection reset by "
                                                   f"fixture); {part} is kept to resume from")):
        fetch("published", tmp_path, opener=opener, sources=sources, retries=0)
    assert part.read_bytes() == PAYLOAD[:1000] and not (tmp_path / "payload.txt").exists()
    [path] = fetch("published", tmp_path, opener=opener, sources=sources)
    assert opener.ranges == [None, "bytes=1000-"]
    assert path.read_bytes() == PAYLOAD and not part.exists()


def test_retries_resume_within_one_fetch(tmp_path, sources):
    opener = FixtureOpener(cuts={PREFIX + "payload.txt": 1234})
    [path] = fetch("published", tmp_path, opener=opener, sources=sources, retries=1, backoff=0)
    assert opener.ranges == [None, "bytes=1234-"] and path.read_bytes() == PAYLOAD


def test_server_ignoring_range_restarts_the_part(tmp_path, sources):
    (tmp_path / "payload.txt.part").write_bytes(b"stale bytes from another server")
    opener = FixtureOpener(honour_range=False)
    [path] = fetch("published", tmp_path, opener=opener, sources=sources)
    assert path.read_bytes() == PAYLOAD


def test_complete_part_is_finished_after_416(tmp_path, sources):
    (tmp_path / "payload.txt.part").write_bytes(PAYLOAD)  # crashed before the rename
    opener = FixtureOpener()
    [path] = fetch("published", tmp_path, opener=opener, sources=sources)
    assert opener.ranges == [f"bytes={len(PAYLOAD)}-"] and path.read_bytes() == PAYLOAD


def test_checksum_mismatch_names_the_file_and_keeps_nothing(tmp_path, sources):
    with pytest.raises(ChecksumMismatch, match=r"payload\.txt .*sha256 is 777da9"):
        fetch("wrong_checksum", tmp_path, opener=FixtureOpener(), sources=sources)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ChecksumMismatch, match="md5 is " + hashlib.md5(PAYLOAD).hexdigest()):
        fetch("wrong_md5", tmp_path, opener=FixtureOpener(), sources=sources)


def test_unpublished_checksum_is_recorded_then_enforced(tmp_path, sources):
    [path] = fetch("unpublished", tmp_path, opener=FixtureOpener(), sources=sources)
    record = (tmp_path / "SHA256SUMS").read_text()
    assert record == f"{hashlib.sha256(PAYLOAD).hexdigest()}  data/payload.txt\n"
    if shutil.which("sha256sum"):  # the record is in coreutils' format
        subprocess.run(["sha256sum", "--check", "--quiet", "SHA256SUMS"], cwd=tmp_path, check=True)
    path.write_bytes(PAYLOAD[:-1] + b"!")
    with pytest.raises(ChecksumMismatch, match=r"data/payload\.txt"):
        fetch("unpublished", tmp_path, opener=FixtureOpener(), sources=sources)


def test_archive_is_unpacked_once(tmp_path, sources):
    fetch("archive", tmp_path, opener=FixtureOpener(), sources=sources)
    extracted = tmp_path / "extracted" / "inner" / "hello.txt"
    assert extracted.read_text() == "hello from the archive\n"
    extracted.unlink()
    fetch("archive", tmp_path, opener=FixtureOpener(), sources=sources)
    assert not extracted.exists()  # the marker says it was unpacked already


def test_a_web_page_sent_for_an_archive_is_neither_kept_nor_recorded(tmp_path, sources):
    """A server may answer with a page (Google Drive: its quota or confirmation page) where the manifest expects an
    archive: on a first fetch, with no published checksum, that page is refused in one error naming the file, not kept
    and its checksum not recorded, so the next fetch gets the archive and records the archive's own."""
    archive = (FIXTURES / "archive.zip").read_bytes()
    answers = [b"<!DOCTYPE html>\n<html><title>Google Drive - Quota exceeded</title></html>", archive]
    opener = lambda request: FixtureResponse(answers.pop(0), 200)  # noqa: E731
    with pytest.raises(InputError, match=r"archive\.zip: https://fixtures\.invalid/archive\.zip sent a web page"):
        fetch("archive", tmp_path, opener=opener, sources=sources)
    assert not (tmp_path / "archive.zip").exists() and not (tmp_path / "archive.zip.part").exists()
    assert not (tmp_path / "SHA256SUMS").exists() and not (tmp_path / "extracted").exists()
    fetch("archive", tmp_path, opener=opener, sources=sources)
    assert (tmp_path / "SHA256SUMS").read_text() == f"{hashlib.sha256(archive).hexdigest()}  archive.zip\n"
    assert (tmp_path / "extracted" / "inner" / "hello.txt").read_text() == "hello from the archive\n"


def test_an_archive_can_be_unpacked_without_its_one_top_folder(tmp_path):
    """GitHub's source archives hold `<repo>-<commit>/`; `unpack_strip_top` puts the repository's files in the folder
    itself, and refuses an archive with more than one entry at its top."""
    from hypvl.acquire.unpack import unpack

    def archive(path, names):
        with zipfile.ZipFile(path, "w") as handle:
            for name in names:
                handle.writestr(name, name)
        return path

    unpack(archive(tmp_path / "repo.zip", ["repo-0123abc/corpus/a.yaml", "repo-0123abc/data/b.json"]),
           tmp_path / "one", strip_top=True)
    assert sorted(p.relative_to(tmp_path / "one").as_posix() for p in (tmp_path / "one").rglob("*") if p.is_file()) \
        == ["corpus/a.yaml", "data/b.json"]
    with pytest.raises(InputError, match="holds 2 entries at its top"):
        unpack(archive(tmp_path / "two.zip", ["a/x", "b/y"]), tmp_path / "two", strip_top=True)
    assert not (tmp_path / "two").exists() or not any((tmp_path / "two").iterdir())


COMMIT = "fedcba9876543210fedcba9876543210fedcba98"


def write_shard(body):
    """A huggingface_hub.snapshot_download stand-in writing test/0.tar with `body`; it records its calls."""
    def download(**kwargs):
        download.calls.append(kwargs)
        shard = Path(kwargs["local_dir"]) / "test" / "0.tar"
        shard.parent.mkdir(parents=True, exist_ok=True)
        shard.write_bytes(body)
    download.calls = []
    return download


def test_hub_snapshot_files_are_recorded(tmp_path, sources, caplog):
    download = write_shard(b"shard zero")
    with caplog.at_level(logging.INFO, logger="hypvl"):
        [path] = fetch("hub", tmp_path, sources=sources, hub_download=download, hub_resolve=lambda repo, rev, kind: COMMIT)
    assert download.calls[0]["repo_id"] == "someone/wds_fixture" and download.calls[0]["allow_patterns"] == ["test/*"]
    assert path == tmp_path / "wds" / "test" / "0.tar"
    assert (tmp_path / "SHA256SUMS").read_text().split() == [
        hashlib.sha256(b"shard zero").hexdigest(), "wds/test/0.tar"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"someone/wds_fixture: revision 'main' is not pinned to a commit in the manifest: resolved to {COMMIT} now and "
        f"recorded in {tmp_path / 'HUB_COMMITS'} (later fetches use it)",
        f"{tmp_path / 'wds/test/0.tar'}: no published checksum; sha256 {hashlib.sha256(b'shard zero').hexdigest()} "
        f"recorded in {tmp_path / 'SHA256SUMS'} on first fetch (unverified: later fetches are checked against this "
        "record only)"]

    with pytest.raises(ChecksumMismatch, match=r"wds/test/0\.tar"):
        fetch("hub", tmp_path, sources=sources, hub_download=write_shard(b"shard changed upstream"))


def test_an_unpinned_hub_revision_is_pinned_to_its_commit_on_first_fetch(tmp_path, sources, caplog):
    """`revision: main` is resolved once, said in a warning and recorded; later fetches download that commit, not
    wherever the branch has moved since."""
    resolved = []

    def resolve(repo, revision, repo_type):
        resolved.append((repo, revision, repo_type))
        return COMMIT

    download = write_shard(b"shard zero")
    with caplog.at_level(logging.WARNING, logger="hypvl"):
        fetch("hub", tmp_path, sources=sources, hub_download=download, hub_resolve=resolve)
    assert resolved == [("someone/wds_fixture", "main", "dataset")] and download.calls[0]["revision"] == COMMIT
    assert (tmp_path / "HUB_COMMITS").read_text() == f"{COMMIT}  someone/wds_fixture\n"
    assert any("'main' is not pinned to a commit" in r.getMessage() and COMMIT in r.getMessage()
               for r in caplog.records)
    fetch("hub", tmp_path, sources=sources, hub_download=download, hub_resolve=resolve)
    assert resolved == [("someone/wds_fixture", "main", "dataset")] and download.calls[1]["revision"] == COMMIT


def test_a_pinned_hub_commit_is_downloaded_as_is(tmp_path, sources):
    download = write_shard(b"shard zero")
    fetch("hub_pinned", tmp_path, sources=sources, hub_download=download,
          hub_resolve=lambda *args: pytest.fail("a pinned commit is never resolved"))
    assert download.calls[0]["revision"] == "0123456789abcdef0123456789abcdef01234567"
    assert not (tmp_path / "HUB_COMMITS").exists()


def test_each_fetch_says_how_the_file_was_verified(tmp_path, sources, caplog):
    """Each fetch says how its file was checked, never silently trusted as verified. Published digest: verified,
    naming its source. None published: unverified on the first fetch (a warning naming the recorded sha256), then
    checked against that record."""
    with caplog.at_level(logging.INFO, logger="hypvl"):
        fetch("published", tmp_path, opener=FixtureOpener(), sources=sources)
        fetch("unpublished", tmp_path, opener=FixtureOpener(), sources=sources)
        fetch("unpublished", tmp_path, opener=FixtureOpener(), sources=sources)
    lines = [(r.levelno, r.getMessage()) for r in caplog.records]
    digest = hashlib.sha256(PAYLOAD).hexdigest()
    assert lines == [
        (logging.INFO, f"{tmp_path / 'payload.txt'}: verified: sha256 published by sha256sum "
                       "tests/data/acquire/payload.txt"),
        (logging.WARNING, f"{tmp_path / 'data/payload.txt'}: no published checksum; sha256 {digest} recorded in "
                          f"{tmp_path / 'SHA256SUMS'} on first fetch (unverified: later fetches are checked against "
                          "this record only)"),
        (logging.INFO, f"{tmp_path / 'data/payload.txt'}: matches the sha256 its first fetch recorded in "
                       f"{tmp_path / 'SHA256SUMS'} (no published checksum)"),
    ]


def test_manual_dataset_stops_with_instructions(tmp_path, sources):
    with pytest.raises(ManualStepRequired) as caught:
        fetch("licensed", tmp_path, opener=FixtureOpener(), sources=sources)
    assert caught.value.missing == ["licensed/val.tar"]
    assert "accept the terms and save val.tar" in caught.value.instructions
    assert isinstance(caught.value, InputError)
    (tmp_path / "licensed").mkdir()
    (tmp_path / "licensed" / "val.tar").write_bytes(b"")
    assert fetch("licensed", tmp_path, sources=sources) == [tmp_path / "licensed" / "val.tar"]


def test_a_manual_file_with_a_published_checksum_is_verified(tmp_path, sources):
    (tmp_path / "licensed").mkdir()
    (tmp_path / "licensed" / "val.tar").write_bytes(b"")
    assert fetch("licensed_checksummed", tmp_path, sources=sources) == [tmp_path / "licensed" / "val.tar"]
    (tmp_path / "licensed" / "val.tar").write_bytes(b"not the published file")
    with pytest.raises(ChecksumMismatch, match=r"licensed/val\.tar \(from the manual step\): sha256 is"):
        fetch("licensed_checksummed", tmp_path, sources=sources)


def test_acquire_checks_what_the_readers_need_before_marking_a_dataset_ready(tmp_path, capsys, caplog):
    """`hypvl acquire --ready ... --out`, as the workflow's acquisition jobs run it: a path the readers need that
    the fetch did not leave is named on one line with the next step, and no marker is written; once it is there,
    the marker records the dataset."""
    from hypvl.cli import main

    (tmp_path / "licensed").mkdir()
    (tmp_path / "licensed" / "val.tar").write_bytes(b"")
    ready, marker = tmp_path / "licensed" / "val", tmp_path / "acquired" / "licensed.json"
    argv = ["acquire", "licensed", "--sources", str(FIXTURES / "sources.yaml"), "--dest", str(tmp_path),
            "--ready", str(ready), "--out", str(marker)]
    assert main(argv) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line == (f"hypvl acquire: licensed: fetched into {tmp_path}, but the readers need {ready}; "
                    "next step: put it there; then run this again")
    assert not marker.exists()
    ready.mkdir()
    assert main(argv) == 0
    record = json.loads(marker.read_text())
    assert record["dataset"] == "licensed" and record["ready"] == [str(ready)]
    assert record["files"] == [str(tmp_path / "licensed" / "val.tar")]
    shutil.rmtree(tmp_path / "licensed")
    marker.unlink()
    assert main(argv) == 2 and not marker.exists()  # the manual step itself is missing: its instructions
    assert "accept the terms and save val.tar" in caplog.text
