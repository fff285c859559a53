"""One acquisition writing into a folder at a time.

An acquisition holds an exclusive flock on `<folder>/.hypvl-acquire.lock` while it fetches, unpacks and records there;
a second one of the same folder says so in one line and waits for it to end (the kernel drops the lock of a process
that dies), then finds the first one's files and verifies them against what it recorded. The lock file is never
written, only locked, and removed as the lock is let go; on a file system without locks (some network mounts) the
acquisition goes on unlocked, said.
"""

import contextlib
import errno
import fcntl
import logging
import os
from pathlib import Path

from hypvl.errors import InputError

log = logging.getLogger(__name__)
LOCK = ".hypvl-acquire.lock"
UNLOCKABLE = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL})


@contextlib.contextmanager
def writing_into(folder: Path):
    """Hold the acquisition lock of `folder` (made where missing) for the `with` block; the lock file is removed as
    the lock is let go (one a killed acquisition left is taken over)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK
    said = False
    while True:
        descriptor = _open(path)
        said = _lock(descriptor, path, folder, said)
        try:
            if os.path.samestat(os.fstat(descriptor), os.lstat(path)):
                break  # the lock file in place, not one its last holder removed after we opened it
        except FileNotFoundError:
            pass
        os.close(descriptor)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        os.close(descriptor)


def _open(path: Path) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError as error:
        raise InputError(f"{path}: cannot open the acquisition lock ({error.strerror}); a symlink there is refused: "
                         "remove it") from None


def _lock(descriptor: int, path: Path, folder: Path, said: bool) -> bool:
    """Take the lock on `descriptor`, waiting (said once) while another acquisition holds it; True once said."""
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        if not said:
            log.warning("%s: another acquisition is writing into %s; waiting for it to end", path, folder)
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        return True
    except OSError as error:
        if error.errno not in UNLOCKABLE:
            raise
        log.warning("%s: this file system takes no lock (%s): going on unlocked; run one acquisition of %s at a "
                    "time", path, error.strerror, folder)
    return said
