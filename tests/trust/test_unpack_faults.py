"""Faults of issue 44 met while unpacking: an unpacking killed midway, and archives of many members (a tar of empty
files passes any byte limit and would exhaust the inodes). The bad-input corpus holds the acquisition's refusal
(tests/trust/test_bad_inputs_hostile.py: acquire_tar_of_many_empty_files)."""

import logging
import os
import subprocess
import sys
import types
import zipfile

import pytest

from helpers.unpack import empty_files
from hypvl.acquire import unpack as unpacking
from hypvl.acquire.manifest import load_sources
from hypvl.acquire.unpack import unpack
from hypvl.errors import InputError

KILLED = """
import os, signal, sys
from pathlib import Path
from hypvl.acquire import unpack
unpack._move_into = lambda *args: os.kill(os.getpid(), signal.SIGKILL)  # killed once every member is out
unpack.unpack(Path(sys.argv[1]), Path(sys.argv[2]))
"""


def archive(path, members):
    """A zip of `members` ({name: bytes})."""
    with zipfile.ZipFile(path, "w") as handle:
        for name, data in members.items():
            handle.writestr(name, data)
    return path


def staging_folders(target):
    return sorted(p.name for p in target.iterdir() if p.name.endswith(".unpacking"))


def test_a_killed_unpacking_leaves_a_staging_folder_the_next_one_removes(tmp_path, caplog):
    """An unpacking killed (SIGKILL) with its members in its staging folder: the next unpacking of that archive
    removes the folder, said, and unpacks; a folder merely named like one is left, said too."""
    zipped = archive(tmp_path / "a.zip", {"inner/hello.txt": b"hello"})
    target = tmp_path / "target"
    killed = subprocess.run([sys.executable, "-c", KILLED, str(zipped), str(target)], capture_output=True, text=True)
    assert killed.returncode == -9, killed.stderr
    [stale] = staging_folders(target)
    lookalike = target / ".a.zip.someone1.unpacking"
    lookalike.mkdir()
    (lookalike / "theirs.txt").write_text("not the suite's")
    with caplog.at_level(logging.WARNING, logger="hypvl"):
        unpack(zipped, target)
    assert (target / "inner" / "hello.txt").read_bytes() == b"hello"
    assert staging_folders(target) == [lookalike.name] and (lookalike / "theirs.txt").exists()
    said = " / ".join(r.getMessage() for r in caplog.records)
    assert f"{target / stale}: removing the staging folder a killed unpacking of {zipped} left" in said
    assert f"{lookalike}: named like a staging folder of {zipped}, but not recognisably the suite's" in said


def test_an_archive_of_more_members_than_its_limit_is_refused(tmp_path):
    """A tar.gz of 12,000 empty files (a few kB, far under any byte limit) passes the default member limit (one per
    KiB of the archive, at least 10,000) and is refused in one line naming it; nothing is unpacked. The manifest's
    unpack_max_members overrides the default."""
    path = tmp_path / "many.tar.gz"
    path.write_bytes(empty_files(12_000))
    with pytest.raises(InputError, match=r"many\.tar\.gz: holds 12000 members, over the limit of 10000 \(the "
                                         r"manifest's unpack_max_members"):
        unpack(path, tmp_path / "target")
    assert list((tmp_path / "target").iterdir()) == []
    unpack(path, tmp_path / "target", max_members=12_000)
    assert len(list((tmp_path / "target" / "e").iterdir())) == 12_000


def test_an_archive_of_more_members_than_free_inodes_is_refused(tmp_path, monkeypatch):
    """An archive whose members number more than the file system's free inodes is refused before anything is
    written."""
    zipped = archive(tmp_path / "a.zip", {f"{i}.txt": b"" for i in range(5)})
    real = os.statvfs(tmp_path)
    few = types.SimpleNamespace(**{name: getattr(real, name) for name in dir(real) if name.startswith("f_")})
    few.f_files, few.f_favail = 100, 3
    monkeypatch.setattr(unpacking.os, "statvfs", lambda path: few)
    with pytest.raises(InputError, match=r"a\.zip: holds 5 members, but .* has 3 free inodes: refused"):
        unpack(zipped, tmp_path / "target")
    assert list((tmp_path / "target").iterdir()) == []


def test_the_manifest_checks_its_member_limit(tmp_path):
    manifest = tmp_path / "sources.yaml"
    manifest.write_text("datasets:\n  x:\n    files:\n      - {url: 'https://x.invalid/a.zip', path: a.zip, "
                        "sha256: null, unpack: true, unpack_max_members: 0}\n")
    with pytest.raises(InputError, match="file 0 unpack_max_members 0 must be a positive whole number of members"):
        load_sources(manifest)
