"""Acquisition from a local mirror (hypvl.acquire.mirror): each URL's file at <host>/<path>, Hub repositories in a
Hugging Face cache read by huggingface_hub itself; checksums verified or recorded as for a download."""

import hashlib
import subprocess

import pytest

from hypvl.acquire.fetch import CHECKSUM_RECORD, ChecksumMismatch, HUB_RECORD, fetch, read_checksum_record
from hypvl.acquire.mirror import Mirror
from hypvl.errors import InputError

PAYLOAD = b"the mirrored file\n"
URL = "https://files.example.org/data/archive.bin"
DRIVE = "https://drive.example.org/uc?export=download&id=13t"
COMMIT = "a" * 40


@pytest.fixture
def mirror(tmp_path):
    """A mirror holding two URLs' files and one Hub dataset repository whose `main` is COMMIT."""
    root = tmp_path / "mirror"
    served = Mirror(root)
    for url in (URL, DRIVE):
        served.path(url).parent.mkdir(parents=True, exist_ok=True)
        served.path(url).write_bytes(PAYLOAD)
    snapshot = served.hub_snapshot("org/wds_set", "dataset", COMMIT, "main")
    for name in ("test/0.tar", "test/nshards.txt", "classnames.txt", "README.md"):
        (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
        (snapshot / name).write_text(name)
    return served


def sources(sha256=None):
    return {"files_set": {"files": [{"url": URL, "path": "archive.bin", "sha256": sha256,
                                     **({"checksum_source": "a test"} if sha256 else {})},
                                    {"url": DRIVE, "path": "drive.json", "sha256": None}]},
            "hub_set": {"hf_snapshot": {"repo": "org/wds_set", "revision": "main", "path": ".",
                                        "allow_patterns": ["test/*", "classnames.txt"]}}}


def test_the_mirror_path_of_a_url_is_its_host_and_path():
    assert Mirror("/m").relative(URL) == "files.example.org/data/archive.bin"
    assert Mirror("/m").relative(DRIVE) == "drive.example.org/uc?export=download&id=13t"
    with pytest.raises(InputError, match="cannot be mirrored"):
        Mirror("/m").relative("https://host.example.org/../../etc/passwd")


def test_files_come_from_the_mirror_verified_against_the_published_digest(tmp_path, mirror):
    digest = hashlib.sha256(PAYLOAD).hexdigest()
    paths = fetch("files_set", tmp_path / "dest", sources=sources(digest), mirror=mirror)
    assert [p.read_bytes() for p in paths] == [PAYLOAD, PAYLOAD]
    assert read_checksum_record(tmp_path / "dest") == {"drive.json": digest}  # the unpublished one, recorded
    with pytest.raises(ChecksumMismatch, match="archive.bin"):
        fetch("files_set", tmp_path / "other", sources=sources("0" * 64), mirror=mirror)
    assert not (tmp_path / "other" / "archive.bin").exists()


def test_a_file_the_mirror_lacks_is_named(tmp_path, mirror):
    mirror.path(URL).unlink()
    with pytest.raises(InputError, match=f"not in the mirror .*{mirror.relative(URL)}"):
        fetch("files_set", tmp_path / "dest", sources=sources(), mirror=mirror)


def test_a_hub_snapshot_comes_from_the_mirror_cache_at_the_commit_its_branch_names(tmp_path, mirror, caplog):
    dest = tmp_path / "dest"
    paths = fetch("hub_set", dest, sources=sources(), mirror=mirror)
    assert sorted(p.relative_to(dest).as_posix() for p in paths) == ["classnames.txt", "test/0.tar",
                                                                     "test/nshards.txt"]
    assert read_checksum_record(dest, HUB_RECORD, 40) == {"org/wds_set": COMMIT}
    assert set(read_checksum_record(dest)) == {"classnames.txt", "test/0.tar", "test/nshards.txt"}
    # a later fetch takes the recorded commit, and a changed file fails its recorded digest
    (mirror.hub_snapshot("org/wds_set", "dataset", COMMIT) / "classnames.txt").write_text("changed")
    with pytest.raises(ChecksumMismatch, match=CHECKSUM_RECORD):
        fetch("hub_set", dest, sources=sources(), mirror=mirror)


def test_a_revision_the_mirror_lacks_is_named(tmp_path, mirror):
    wrong = sources()
    wrong["hub_set"]["hf_snapshot"]["revision"] = "dev"
    with pytest.raises(InputError, match="no dataset repository at revision 'dev'"):
        fetch("hub_set", tmp_path / "dest", sources=wrong, mirror=mirror)


def test_a_mirror_is_a_folder_or_a_file_url(tmp_path, mirror):
    assert Mirror.at(mirror.root.as_uri()).root == mirror.root
    assert Mirror.at(None) is None
    with pytest.raises(InputError, match="file:// URL"):
        Mirror.at("https://mirror.example.org/data")
    with pytest.raises(InputError, match="no such folder"):
        Mirror.at(tmp_path / "absent")


def test_hypvl_acquire_takes_a_mirror(tmp_path, mirror):
    import yaml

    manifest = tmp_path / "sources.yaml"
    manifest.write_text(yaml.safe_dump({"datasets": sources()}))
    result = subprocess.run(["hypvl", "acquire", "hub_set", "--sources", str(manifest), "--dest",
                             str(tmp_path / "dest"), "--mirror", mirror.root.as_uri()],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "dest" / "test" / "nshards.txt").read_text() == "test/nshards.txt"


def test_what_the_mirror_serves_on_the_same_disk_is_linked_not_copied(tmp_path, mirror, monkeypatch):
    """A mirror on the datasets' file system is not stored twice: each file fetched from it, a Hub snapshot's too, is a
    hard link to the mirror's (verified as a download is); a part file a killed fetch left is replaced, never written
    into; a digest that fails unlinks the link and leaves the mirror's file; across file systems, a copy."""
    import errno
    import os

    digest = hashlib.sha256(PAYLOAD).hexdigest()
    (tmp_path / "dest").mkdir()
    (tmp_path / "dest" / "archive.bin.part").write_bytes(b"a killed fetch's part")
    paths = fetch("files_set", tmp_path / "dest", sources=sources(digest), mirror=mirror)
    assert all(path.samefile(mirror.path(url)) for path, url in zip(paths, (URL, DRIVE)))
    assert mirror.path(URL).read_bytes() == PAYLOAD and not (tmp_path / "dest" / "archive.bin.part").exists()
    hub = fetch("hub_set", tmp_path / "hub", sources=sources(), mirror=mirror)
    snapshot = mirror.hub_snapshot("org/wds_set", "dataset", COMMIT)
    assert all(path.samefile(snapshot / path.relative_to(tmp_path / "hub")) for path in hub)
    with pytest.raises(ChecksumMismatch):
        fetch("files_set", tmp_path / "bad", sources=sources("0" * 64), mirror=mirror)
    assert mirror.path(URL).read_bytes() == PAYLOAD and mirror.path(URL).stat().st_nlink == 2  # the good fetch's

    def other_disk(*args, **kwargs):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", other_disk)
    [copied, _] = fetch("files_set", tmp_path / "copy", sources=sources(digest), mirror=mirror)
    assert copied.read_bytes() == PAYLOAD and not copied.samefile(mirror.path(URL))
