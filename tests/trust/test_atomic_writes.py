"""Atomic writes: all or nothing, with ordinary file permissions."""

import errno
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


def test_a_folder_is_replaced_only_when_it_holds_only_what_a_step_recorded(tmp_path):
    """A folder written by atomic_directory records its files; the next one replaces it (no old file left), a folder
    holding any other file is refused before the work, and a record naming a path outside deletes nothing there."""
    from hypvl.errors import InputError
    from hypvl.io import OUTPUTS, atomic_directory

    target = tmp_path / "out"
    with atomic_directory(target) as folder:
        (folder / "a").mkdir()
        (folder / "a" / "old.txt").write_text("1")
    assert (target / OUTPUTS).read_text() == "a/old.txt\n"
    with atomic_directory(target) as folder:
        (folder / "new.txt").write_text("2")
    assert sorted(p.name for p in target.iterdir()) == [OUTPUTS, "new.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temporary or old folder left
    (target / "mine.txt").write_text("a user's")
    worked = []
    with pytest.raises(InputError, match=r"out: holds files this step did not write \(mine\.txt\); not replaced"):
        with atomic_directory(target):
            worked.append(True)
    assert not worked and (target / "mine.txt").read_text() == "a user's"
    (target / "mine.txt").unlink()
    (tmp_path / "precious.txt").write_text("outside")
    (target / OUTPUTS).write_text("new.txt\n../precious.txt\n")
    with atomic_directory(target) as folder:
        (folder / "third.txt").write_text("3")
    assert (tmp_path / "precious.txt").read_text() == "outside"
    assert sorted(p.name for p in target.iterdir()) == [OUTPUTS, "third.txt"]


class FillsUp:
    """A file that takes `room` bytes, then refuses with ENOSPC: a disk filling up under a writer."""

    def __init__(self, handle, room: int):
        self.handle, self.room = handle, room

    def write(self, data) -> int:
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= len(data)
        return self.handle.write(data)

    def flush(self):
        self.handle.flush()


def test_torch_save_on_a_full_disk_is_one_line_naming_the_file_and_leaves_nothing(tmp_path):
    """torch.save ends a refused write in a RuntimeError of its zip writer whose context is the OSError: the atomic
    writers find the disk's refusal under it (a pilot filled the disk: tracebacks, not lines, before)."""
    import torch

    from hypvl.errors import InputError
    from hypvl.io import atomic_directory, os_error_in

    blob = {"weight": torch.zeros(4096)}
    path = tmp_path / "checkpoint.pt"
    with pytest.raises(InputError) as refused:
        with atomic_write(path, mode="wb") as handle:
            torch.save(blob, FillsUp(handle, 1000))
    assert str(refused.value) == f"{path}: cannot write (No space left on device); nothing was changed there"
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InputError, match=r"weights: cannot write \(No space left on device\)"):
        with atomic_directory(tmp_path / "weights") as folder, open(folder / "model.bin", "wb") as handle:
            torch.save(blob, FillsUp(handle, 1000))
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RuntimeError) as bug, open(tmp_path / "x", "wb") as handle:  # what the writers see through
        torch.save(blob, FillsUp(handle, 1000))
    assert not isinstance(bug.value, OSError) and os_error_in(bug.value).errno == errno.ENOSPC
    assert os_error_in(ValueError("not a disk")) is None
