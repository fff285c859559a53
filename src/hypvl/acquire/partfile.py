"""A partial download's file, written only where it is the download's own: never through a symlink or a hard link.

A killed fetch may leave at `<file>.part` something no download wrote there (a link to a mirror's file, in older
versions; a symlink planted by someone else): writing through it would change the file it links to. Such a name is
removed (the name only: what it links to is untouched) and the download starts afresh in a file created anew.
"""

import logging
import os
import stat
from pathlib import Path

from hypvl.errors import InputError

log = logging.getLogger(__name__)


def _own(status: os.stat_result) -> bool:
    """True for a regular file with no other name (no hard link elsewhere)."""
    return stat.S_ISREG(status.st_mode) and status.st_nlink == 1


def resumable_size(part: Path) -> int:
    """The bytes of `part` a download may resume after: its size where it is a file of our own, else 0, a symlink or
    hard link at its name removed (its target untouched); InputError for anything else there (a folder, a device)."""
    try:
        status = os.lstat(part)
    except FileNotFoundError:
        return 0
    if _own(status):
        return status.st_size
    if not (stat.S_ISLNK(status.st_mode) or stat.S_ISREG(status.st_mode)):
        raise InputError(f"{part}: not a file, where a download keeps its partial file: move it away")
    log.warning("%s: a link (%s), not a partial download of ours: the name removed (what it links to is untouched), "
                "the download started afresh", part,
                "symlink" if stat.S_ISLNK(status.st_mode) else f"{status.st_nlink} names of one file")
    os.unlink(part)
    return 0


def open_part(part: Path, append: bool) -> int:
    """A descriptor writing `part`: appending to it where it is a file of our own (`resumable_size` said so), else
    into a file created now (O_EXCL), whatever had its name removed first; never through a link."""
    if append:
        descriptor = os.open(part, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
        if _own(os.fstat(descriptor)):
            return descriptor
        os.close(descriptor)
        raise ConnectionError(f"{part}: linked elsewhere while the download ran: not written")
    try:
        os.unlink(part)
    except FileNotFoundError:
        pass
    return os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
