"""Symlinks in a mirror (issue 44): followed from their own folder and within the mirror only; a copy across file
systems keeps the mirror file's permissions. What a refusal prints is in the bad-input corpus
(tests/trust/test_bad_inputs_hostile.py: acquire_mirror_symlink_*)."""

import errno
import hashlib
import os

import pytest

from hypvl.acquire.fetch import fetch, read_checksum_record
from hypvl.acquire.mirror import Mirror
from hypvl.errors import InputError

URL = "https://files.example.org/data/archive.bin"
COMMIT = "b" * 40


@pytest.fixture
def mirror(tmp_path):
    served = Mirror(tmp_path / "mirror")
    served.path(URL).parent.mkdir(parents=True)
    return served


def sources():
    return {"x": {"files": [{"url": URL, "path": "archive.bin", "sha256": None}]},
            "hub": {"hf_snapshot": {"repo": "org/set", "revision": "main", "path": ".", "allow_patterns": ["*.txt"]}}}


def private_file(tmp_path):
    secret = tmp_path / "home" / "secret.key"
    secret.parent.mkdir()
    secret.write_bytes(b"a private key")
    secret.chmod(0o600)
    return secret


def test_an_absolute_symlink_out_of_the_mirror_is_refused(tmp_path, mirror):
    """A mirror file that is an absolute symlink to a private file elsewhere: refused, naming it; nothing copied or
    recorded."""
    mirror.path(URL).symlink_to(private_file(tmp_path))
    with pytest.raises(InputError, match=r"archive\.bin: a symlink in the mirror .* leads out of it \(to .*secret"):
        fetch("x", tmp_path / "dest", sources=sources(), mirror=mirror)
    assert not (tmp_path / "dest" / "archive.bin").exists() and read_checksum_record(tmp_path / "dest") == {}


def test_a_relative_symlink_out_of_the_mirror_is_refused(tmp_path, mirror):
    """A relative symlink climbing out of the mirror is resolved from its own folder, and refused."""
    private_file(tmp_path)
    mirror.path(URL).symlink_to("../../../home/secret.key")
    with pytest.raises(InputError, match="leads out of it"):
        fetch("x", tmp_path / "dest", sources=sources(), mirror=mirror)


def test_a_relative_symlink_inside_the_mirror_is_read_from_its_own_folder(tmp_path, mirror):
    """A relative symlink within the mirror serves the file it names there, not a file of that name in the dataset
    folder; the fetched file is a file of its own (no symlink) and its true digest is recorded."""
    (mirror.path(URL).parent / "real.bin").write_bytes(b"the mirror's file")
    mirror.path(URL).symlink_to("real.bin")
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "real.bin").write_bytes(b"a file of the dataset folder")
    [path] = fetch("x", dest, sources=sources(), mirror=mirror)
    assert not path.is_symlink() and path.read_bytes() == b"the mirror's file"
    assert read_checksum_record(dest) == {"archive.bin": hashlib.sha256(b"the mirror's file").hexdigest()}


def test_a_copy_across_file_systems_keeps_the_mirror_files_permissions(tmp_path, mirror, monkeypatch):
    """A mirror file readable by its owner alone is copied (another file system) as readable by its owner alone."""
    mirror.path(URL).write_bytes(b"private data")
    mirror.path(URL).chmod(0o600)

    def other_disk(*args, **kwargs):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", other_disk)
    [path] = fetch("x", tmp_path / "dest", sources=sources(), mirror=mirror)
    assert path.read_bytes() == b"private data" and path.stat().st_mode & 0o777 == 0o600


def test_a_hub_snapshot_file_linked_out_of_the_mirror_is_refused(tmp_path, mirror):
    """The Hub cache's own links (snapshot to blob) are followed; one to a file outside the mirror is refused, and a
    ref that holds no commit (one linked to a private file, say) too."""
    snapshot = mirror.hub_snapshot("org/set", "dataset", COMMIT, "main")
    blob = snapshot.parent.parent / "blobs" / "0123"
    blob.parent.mkdir(parents=True)
    blob.write_text("class names")
    snapshot.mkdir(parents=True)
    (snapshot / "classnames.txt").symlink_to(os.path.relpath(blob, snapshot))
    [path] = fetch("hub", tmp_path / "one", sources=sources(), mirror=mirror)
    assert path.read_text() == "class names" and not path.is_symlink()
    (snapshot / "secret.txt").symlink_to(private_file(tmp_path))
    with pytest.raises(InputError, match=r"secret\.txt: a symlink in the mirror .* leads out of it"):
        fetch("hub", tmp_path / "two", sources=sources(), mirror=mirror)
    ref = snapshot.parent.parent / "refs" / "main"
    ref.unlink()
    ref.symlink_to(tmp_path / "home" / "secret.key")
    with pytest.raises(InputError, match=r"refs/main: a symlink in the mirror .* leads out of it"):
        fetch("hub", tmp_path / "three", sources=sources(), mirror=mirror)
