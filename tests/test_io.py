"""Atomic writes: all or nothing, with ordinary file permissions."""

import os
import stat

import pytest

from hypvl.io import atomic_write


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_write(path) as handle:
            handle.write("partial")
            raise RuntimeError("interrupted")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_written_file_gets_umask_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        with atomic_write(tmp_path / "a" / "out.txt") as handle:
            handle.write("new")
    finally:
        os.umask(old)
    assert (tmp_path / "a" / "out.txt").read_text() == "new"
    assert stat.S_IMODE((tmp_path / "a" / "out.txt").stat().st_mode) == 0o644
