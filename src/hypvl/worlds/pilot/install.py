"""The pilot world is written aside, then moved into place, never over a file the suite did not write.

Its writers fill a staging folder (`.pilot-world.partial` in data_dir: one tree per destination, the dataset folders
and the mirror). Once the world is whole, every staged file is checked against its destination: a file already
there is replaced only where it holds what the pilot world recorded writing there (RECORD: the sha256 and relative
path of each, a line, in each destination) or the very bytes staged; a folder on the way that is a symlink or a file
is never written through. Anything else (a user's ImageNet tar in a real data_dir, or one put in place of the pilot's)
refuses the whole world, naming the files, before anything moves.
"""

import contextlib
import os
import shutil
from pathlib import Path

from hypvl.errors import InputError, listed
from hypvl.io import atomic_write
from hypvl.provenance import file_digest

RECORD = ".hypvl-pilot-world"  # in each destination: every file the pilot world put there
STAGING = ".pilot-world.partial"  # in data_dir, while the world is written


def _files(folder: Path) -> list[str]:
    """Every file (or symlink) under `folder`, relative, sorted."""
    found = []
    for root, dirs, files in os.walk(folder):
        links = [name for name in dirs if (Path(root) / name).is_symlink()]
        found += [(Path(root) / name).relative_to(folder).as_posix() for name in (*files, *links)]
    return sorted(found)


def recorded(target: Path) -> dict[str, str]:
    """Relative path -> sha256 of each file the pilot world recorded writing under `target`."""
    record = target / RECORD
    lines = record.read_text(encoding="utf-8").splitlines() if record.is_file() else []
    return {name: digest for digest, _, name in (line.partition("  ") for line in lines) if name}


def _unchanged(path: Path, digest: str | None) -> bool:
    """Whether `path` is a plain file holding the bytes of sha256 `digest`."""
    return digest is not None and not path.is_symlink() and path.is_file() and file_digest(path) == digest


def foreign(target: Path, staged: dict[str, str]) -> list[str]:
    """The `staged` files (relative path -> sha256) that may not be moved to `target`: a file there neither what the
    pilot world recorded writing nor the bytes staged, or a folder on the way that is a symlink or not a folder."""
    mine, refused = recorded(target), []
    for name, digest in staged.items():
        path = target / name
        parents = list(Path(name).parents)[:-1]  # its folders below `target`
        if any((target / p).is_symlink() or ((target / p).exists() and not (target / p).is_dir()) for p in parents):
            refused.append(name)
        elif (path.exists() or path.is_symlink()) and not (_unchanged(path, mine.get(name))
                                                           or _unchanged(path, digest)):
            refused.append(name)
    return refused


def install(pairs: list[tuple[Path, Path]], last: str) -> None:
    """Move each staged tree (stage, target) into its target, the file named `last` after every other; InputError,
    with nothing moved, where a file may not be replaced (`foreign`)."""
    plans = [(stage, target, {name: file_digest(stage / name) for name in _files(stage)})
             for stage, target in pairs if stage.is_dir()]
    for _, target, staged in plans:
        refused = foreign(target, staged)
        if refused:
            raise InputError(f"{target}: holds files the pilot world did not write ({listed(refused)}); not "
                             "overwritten, none of its staged files moved: its data_dir and mirror must be the "
                             "pilot's own (workflows/config/pilot.yaml)")
    for _, target, staged in plans:
        target.mkdir(parents=True, exist_ok=True)
        entries = {**recorded(target), **staged}
        with atomic_write(target / RECORD, encoding="utf-8") as handle:  # before the files: a move cut short is ours
            handle.writelines(f"{entries[name]}  {name}\n" for name in sorted(entries))
    moves = [(stage / name, target / name) for stage, target, staged in plans for name in staged]
    for source, dest in sorted(moves, key=lambda move: move[1].name == last):
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.is_symlink():  # recorded: replaced itself, never written through
            dest.unlink()
        elif dest.is_dir():
            raise InputError(f"{dest}: a folder where the pilot world writes a file; not replaced")
        shutil.move(source, dest)  # a rename on one file system, a copy across


@contextlib.contextmanager
def staging(data_dir: Path):
    """A fresh staging folder in `data_dir` (an earlier killed world's removed first: the suite's own), deleted
    when the block ends."""
    stage = Path(data_dir) / STAGING
    if stage.is_symlink():
        stage.unlink()
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    try:
        yield stage
    finally:
        shutil.rmtree(stage, ignore_errors=True)
