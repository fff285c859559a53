"""Output written so that nothing is lost: a reader never sees a half-written file or folder, a folder is replaced
only once its successor is complete, only files the suite recorded as its own outputs are ever deleted, and every
JSON written is strict JSON (no NaN or Infinity)."""

import contextlib
import errno
import json
import logging
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

from hypvl.errors import InputError, listed, non_finite

log = logging.getLogger(__name__)
OUTPUTS = ".hypvl-outputs"  # in a folder the suite wrote whole: every file it wrote there, a relative path a line
# errors of a disk that takes no more (full, read-only, not ours): said in one line naming the path
DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def disk_error(path, error: OSError) -> InputError | None:
    """The one-line InputError of a write to `path` the disk refused (full, read-only, no permission), else None."""
    if error.errno not in DISK_ERRORS:
        return None
    return InputError(f"{path}: cannot write ({os.strerror(error.errno)}); nothing was changed there")


def os_error_in(error: BaseException) -> OSError | None:
    """The OSError `error` is or arose from (its cause or context, at any depth), else None: a library may end a
    failed write in an error of its own (torch.save: a RuntimeError of its zip writer after the disk refused)."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, OSError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def os_error_line(error: OSError) -> str | None:
    """One line for an OSError a step ends with, naming its file: a disk that takes no more, or a file gone (an input
    deleted while the step ran); None for anything else (a bug: its traceback is wanted)."""
    if error.filename is None:
        return None
    if error.errno in DISK_ERRORS:
        return f"{error.filename}: {os.strerror(error.errno)}"
    if isinstance(error, FileNotFoundError):
        return f"{error.filename}: no such file (deleted while the step ran?)"
    return None


@contextlib.contextmanager
def atomic_write(path, mode="w", **open_kwargs):
    """Open a temporary file beside `path`; on success rename it over `path`, else delete it. A disk that takes no
    more (full, read-only) is an InputError naming `path`."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise disk_error(path, error) or error from None
    try:
        with os.fdopen(fd, mode, **open_kwargs) as handle:
            yield handle
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files; give the usual permissions
        os.replace(tmp, path)
    except BaseException as error:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        cause = os_error_in(error)
        if cause is not None and cause.filename in (None, tmp, str(path)) and disk_error(path, cause):
            raise disk_error(path, cause) from None
        raise


def link_or_copy(source, target) -> None:
    """`target` as a hard link to the regular file `source` where both lie on one file system, else a copy of it with
    `source`'s permissions (never looser; the umask applies too): what a local mirror serves is not stored twice (the
    pilot's full-size weights took twice their 14 GB). `source` must be no symlink (resolve one first: a hard link to
    a symlink resolves against the link's folder). An existing `target` is unlinked first, never written into (a link
    would write `source`), and the suite never opens a linked file for writing (`hypvl.acquire.download` replaces a
    partial download that is a link), so `source` never changes through the link."""
    status = os.lstat(source)
    if not stat.S_ISREG(status.st_mode):
        raise InputError(f"{source}: not a regular file (a symlink, folder or device): neither linked nor copied")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(target)
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError:
        _copy_new(source, target, status.st_mode & 0o777)


def _copy_new(source, target, mode: int) -> None:
    """Copy `source` into a file `target` created now with `mode` (never through a link at its name); a failed copy
    leaves no `target`."""
    with open(source, "rb", opener=lambda name, flags: os.open(name, flags | os.O_NOFOLLOW)) as reader:
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        try:
            with os.fdopen(descriptor, "wb") as writer:
                shutil.copyfileobj(reader, writer, 16 << 20)
        except BaseException:
            os.unlink(target)
            raise


def check_writable(folder) -> None:
    """InputError naming `folder` when a file cannot be created in it (read-only, no permission, full disk): asked
    before a long step's work, so that a refusal costs nothing."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder) as handle:
            handle.write(b"\0" * 4096)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as error:
        raise disk_error(folder, error) or InputError(f"{folder}: cannot write here ({error.strerror})") from None


def recorded_outputs(folder) -> set[str] | None:
    """The files (relative paths) the suite recorded writing into `folder` (its OUTPUTS record); None without one."""
    record = Path(folder) / OUTPUTS
    if not record.is_file():
        return None
    return {line for line in record.read_text(encoding="utf-8").splitlines() if line}


def _files(folder: Path) -> list[str]:
    """Every file (or link) under `folder`, relative, its OUTPUTS record left out."""
    found = []
    for root, dirs, files in os.walk(folder):
        links = [name for name in dirs if (Path(root) / name).is_symlink()]  # os.walk does not enter them
        found += [(Path(root) / name).relative_to(folder).as_posix() for name in (*files, *links)]
    return sorted(name for name in found if name != OUTPUTS)


def foreign_files(folder) -> list[str]:
    """The files under `folder` that its OUTPUTS record does not list (every file where it has no record)."""
    recorded = recorded_outputs(folder) or set()
    return [name for name in _files(Path(folder)) if name not in recorded]


def check_replaceable(path) -> None:
    """InputError unless `path` is absent, or a folder holding only files the suite recorded as its outputs there:
    a folder holding anything else (a user's files, a mistyped destination) is never replaced."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return
    if not path.is_dir() or path.is_symlink():
        raise InputError(f"{path}: exists and is not a folder this step wrote; not replaced (choose another "
                         "destination, or move it away)")
    foreign = foreign_files(path)
    if foreign:
        raise InputError(f"{path}: holds files this step did not write ({listed(foreign)}); not replaced: choose "
                         "another destination, or move them away")


def remove_recorded(folder) -> None:
    """Delete the files `folder`'s OUTPUTS record lists, then its folders left empty; anything else stays (said)."""
    folder = Path(folder)
    inside = os.path.realpath(folder)
    for name in sorted(recorded_outputs(folder) or ()):
        target = folder / name
        if os.path.commonpath([inside, os.path.realpath(target.parent)]) != inside:
            continue  # a record naming a path outside the folder (edited by hand?) deletes nothing there
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
    with contextlib.suppress(FileNotFoundError):
        (folder / OUTPUTS).unlink()
    for root, _, _ in sorted(os.walk(folder), key=lambda entry: -len(Path(entry[0]).parts)):
        with contextlib.suppress(OSError):  # not empty: something the suite did not write
            os.rmdir(root)
    if folder.exists():
        log.warning("%s: kept (it holds files hypvl did not write: %s)", folder, listed(_files(folder)))


def record_outputs(folder) -> None:
    """Write `folder`'s OUTPUTS record: every file now under it."""
    folder = Path(folder)
    names = _files(folder)
    with atomic_write(folder / OUTPUTS, encoding="utf-8") as handle:
        handle.writelines(f"{name}\n" for name in names)


@contextlib.contextmanager
def atomic_directory(path, staging=None):
    """Yield a temporary folder beside `path`; on success it records its files (OUTPUTS) and replaces `path`, else it
    is deleted: a reader sees the old folder or the complete new one. An existing `path` must hold only files a
    step recorded there (`check_replaceable`, asked before the work and again before the swap); once the new folder
    is in place, the old one's recorded files are deleted, and nothing else. With `staging` (a folder beside `path`
    that a resumable step keeps between attempts), that folder is yielded instead, made where missing, and kept on
    failure."""
    path = Path(path)
    check_replaceable(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if staging is None:
            tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
        else:
            tmp = Path(staging)
            tmp.mkdir(exist_ok=True)
    except OSError as error:
        raise disk_error(path, error) or error from None
    try:
        yield tmp
        record_outputs(tmp)
        os.chmod(tmp, 0o777 & ~_umask())
        check_replaceable(path)
        old = path.with_name(f"{tmp.name}.old") if path.exists() else None
        if old is not None:
            os.replace(path, old)
        try:
            os.replace(tmp, path)
        except OSError:
            if old is not None:
                os.replace(old, path)  # the old folder back in its place
            raise
    except BaseException as error:
        if staging is None:
            shutil.rmtree(tmp, ignore_errors=True)  # made by mkdtemp above: only this step's files
        cause = os_error_in(error)
        if cause is not None and disk_error(path, cause) is not None:
            raise disk_error(path, cause) from None
        raise
    if old is not None:
        remove_recorded(old)


def json_text(value, where, **dumps) -> str:
    """`value` as strict JSON (no NaN or Infinity, which RFC 8259 does not have); a number that is not finite is an
    InputError naming `where` and its key."""
    try:
        return json.dumps(value, allow_nan=False, **dumps)
    except ValueError:
        key = non_finite(value)
        if key is None:
            raise
        raise InputError(f"{where}: {key} is not a finite number; nothing written") from None


def write_json(path, value, **dumps) -> None:
    """Write `value` to `path` as strict JSON (`json_text`), atomically, in UTF-8."""
    text = json_text(value, path, **dumps)
    with atomic_write(path, mode="w", encoding="utf-8") as handle:
        handle.write(text)


def future_dated(folders, now: float | None = None, slack: float = 60.0) -> list[Path]:
    """Every file under `folders` dated more than `slack` seconds after `now` (a clock set wrong, a copy from a
    machine ahead), sorted."""
    limit = (time.time() if now is None else now) + slack
    found, folders = [], [os.fspath(folder) for folder in folders]
    while folders:  # os.walk's files and folders (no link to a folder followed), by scandir: every planning reads them
        with contextlib.suppress(OSError), os.scandir(folders.pop()) as entries:  # gone meanwhile: nothing to date
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.is_dir():
                        if not entry.is_symlink():
                            folders.append(entry.path)
                    elif entry.stat(follow_symlinks=False).st_mtime > limit:
                        found.append(Path(entry.path))
    return sorted(found)


def refuse_future_dated(folders, now: float | None = None) -> None:
    """InputError naming the files under `folders` dated in the future. Snakemake decides what is current by dates
    alone: such a file looks newer than whatever it was made from whenever that changed (a metric edited after a
    table, and the table never made again), and redating it to now would hide that for good. Its date says nothing,
    so the user decides: removed, it is made again, with everything made from it."""
    found = future_dated(folders, now)
    if found:
        first = time.strftime("%Y-%m-%d %H:%M", time.localtime(found[0].lstat().st_mtime))
        raise InputError(f"{listed(found)}: dated in the future (the first {first}): whether a file is current "
                         "cannot be told from its date; remove it to have it made again, with what is made from it "
                         "(or, knowing it is current, date it now: touch)")
