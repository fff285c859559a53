"""Unpacking a fetched archive (zip, tar, tar.gz) into a dataset folder, within limits.

An archive is unpacked only when its members add up to at most a limit (the manifest's `unpack_max_bytes`, else
UNPACK_RATIO times the archive's size) and fit the disk, and number at most a limit too (the manifest's
`unpack_max_members`, else one per UNPACK_MEMBER_BYTES of the archive, at least UNPACK_MEMBER_FLOOR) that fits the
file system's free inodes (a tar of a million empty files passes any byte limit). It is unpacked into a staging
folder beside the target and moved into place once whole, so a failed unpacking (a zip bomb, a truncated archive, a
full disk) leaves nothing of it behind, and a file already there is never overwritten by a different one. A staging
folder a killed unpacking left is removed by the next one of the same archive, where it is recognisably its own (its
name and the STAGED note inside it); the acquisition's lock (`hypvl.acquire.lock`) keeps two from running at once.
zipfile and tarfile (its "data" filter) keep every member inside the folder. An archive whose members all sit in one
top folder (GitHub's source archives: `<repo>-<commit>/`) may be unpacked without it (`strip_top`), so that the
repository's files land in the dataset's folder itself.
"""

import filecmp
import glob
import logging
import os
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from pathlib import Path

from hypvl.errors import InputError
from hypvl.io import atomic_write

log = logging.getLogger(__name__)

UNPACK_RATIO = 100  # an archive may unpack to this many times its size, unless the manifest says how much
UNPACK_FLOOR = 16 << 20  # ... and to this many bytes in any case
UNPACK_MEMBER_BYTES = 1024  # an archive may hold one member per this many of its bytes, unless the manifest says
UNPACK_MEMBER_FLOOR = 10_000  # ... and this many members in any case
STAGED = ".hypvl-staging"  # in a staging folder, beside the unpacked members: what it stages


def _unpacked_size(archive: Path) -> tuple[int, int]:
    """(the bytes `archive`'s members add up to, how many members it holds), from its index (zipfile never writes more
    than a member declares; a tar member is as long as its header says)."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as handle:
            members = handle.infolist()
            return sum(info.file_size for info in members), len(members)
    with tarfile.open(archive) as handle:
        members = handle.getmembers()
        return sum(member.size for member in members if member.isfile()), len(members)


def check_archive(candidate: Path, path: Path, url: str) -> None:
    """InputError naming `path` unless `candidate` (the download of `url` to be kept as `path`) is a zip or tar
    archive: a server may answer with a web page instead (Google Drive's quota or confirmation page), which must not
    be kept, nor its checksum recorded as the file's."""
    if zipfile.is_zipfile(candidate) or tarfile.is_tarfile(candidate):
        return
    with open(candidate, "rb") as handle:
        head = handle.read(512).lstrip().lower()
    kind = "a web page" if head.startswith((b"<!doctype html", b"<html")) else "a file that is no zip or tar archive"
    raise InputError(f"{path}: {url} sent {kind}, not the archive the manifest unpacks; not kept (fetch it again "
                     "later, or as the dataset's prepare note says)")


def unpack(archive: Path, target: Path, limit: int | None = None, strip_top: bool = False,
           max_members: int | None = None) -> None:
    """Extract `archive` into `target` once (a `.<archive>.unpacked` marker records it): only when its members add
    up to at most `limit` bytes (default: UNPACK_RATIO times the archive, at least UNPACK_FLOOR) and fit the disk, and
    number at most `max_members` (default: one per UNPACK_MEMBER_BYTES of the archive, at least UNPACK_MEMBER_FLOOR)
    and the free inodes; into a staging folder beside, moved into `target` once whole (`strip_top`: the contents of
    its one top folder). A failure leaves nothing of it behind."""
    marker = archive.with_name(f".{archive.name}.unpacked")
    if marker.exists():
        return
    target.mkdir(parents=True, exist_ok=True)
    try:
        size, members = _unpacked_size(archive)
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, zlib.error) as error:
        raise InputError(f"{archive}: cannot unpack: {error}") from None
    _check_limits(archive, target, size, members, limit, max_members)
    _remove_stale_staging(archive, target)
    staging = Path(tempfile.mkdtemp(dir=target, prefix=f".{archive.name}.", suffix=".unpacking"))
    try:
        (staging / STAGED).write_text(f"{archive.name}\n")
        members_root = staging / "members"
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as handle:  # extractall drops "..", absolute names
                handle.extractall(members_root)
        else:
            with tarfile.open(archive) as handle:
                handle.extractall(members_root, filter="data")
        members_root.mkdir(exist_ok=True)  # an archive without members
        _move_into(_top_folder(members_root, archive) if strip_top else members_root, target, archive)
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, zlib.error) as error:
        raise InputError(f"{archive}: cannot unpack: {error}; nothing of it was kept") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # made above: only this archive's files
    with atomic_write(marker) as handle:  # a new file: never written through a link at its name
        handle.write(f"{archive.name}\n")


def _check_limits(archive, target, size, members, limit, max_members) -> None:
    """InputError naming `archive` where its `size` bytes or its number of `members` pass their limits (the manifest's,
    else the defaults) or what the disk under `target` has free."""
    limit = limit or max(UNPACK_RATIO * archive.stat().st_size, UNPACK_FLOOR)
    if size > limit:
        raise InputError(f"{archive}: unpacks to {size} bytes, over the limit of {limit} (the manifest's "
                         f"unpack_max_bytes, or {UNPACK_RATIO} x the archive): refused (a zip bomb?)")
    max_members = max_members or max(archive.stat().st_size // UNPACK_MEMBER_BYTES, UNPACK_MEMBER_FLOOR)
    if members > max_members:
        raise InputError(f"{archive}: holds {members} members, over the limit of {max_members} (the manifest's "
                         f"unpack_max_members, or one per {UNPACK_MEMBER_BYTES} bytes of the archive): refused (an "
                         "inode bomb?)")
    free = shutil.disk_usage(target).free
    if size > free:
        raise InputError(f"{archive}: unpacks to {size} bytes, but {target} has {free} free: refused")
    disk = os.statvfs(target)
    if disk.f_files and members > disk.f_favail:  # f_files 0: the file system counts no inodes
        raise InputError(f"{archive}: holds {members} members, but {target} has {disk.f_favail} free inodes: refused")


def _remove_stale_staging(archive: Path, target: Path) -> None:
    """Remove the staging folders of `archive` a killed unpacking left in `target`: only those recognisably its own
    (named as `unpack` names them, holding its STAGED note naming the archive); another is named, not touched."""
    expected = f"{archive.name}\n".encode()
    for folder in target.glob(f".{glob.escape(archive.name)}.*.unpacking"):
        note = folder / STAGED
        if not folder.is_symlink() and note.is_file() and not note.is_symlink() \
                and note.stat().st_size == len(expected) and note.read_bytes() == expected:
            log.warning("%s: removing the staging folder a killed unpacking of %s left", folder, archive)
            shutil.rmtree(folder)
        else:
            log.warning("%s: named like a staging folder of %s, but not recognisably the suite's: left as it is "
                        "(remove it yourself)", folder, archive)


def _top_folder(staging: Path, archive: Path) -> Path:
    """The one folder `archive` unpacked into `staging`; InputError when its members are not all inside one."""
    entries = list(staging.iterdir())
    if len(entries) != 1 or not entries[0].is_dir():
        raise InputError(f"{archive}: the manifest unpacks it without its top folder, but it holds "
                         f"{len(entries)} entries at its top ({', '.join(sorted(e.name for e in entries)[:3])})")
    return entries[0]


def _move_into(staging: Path, target: Path, archive: Path) -> None:
    """Move the files unpacked into `staging` to the same places under `target`; a file already there is left as it
    is if it is the same, else the whole move is refused before anything is moved (never overwritten)."""
    files = sorted(path for path in staging.rglob("*") if path.is_file() or path.is_symlink())
    clashes = [path.relative_to(staging).as_posix() for path in files if (target / path.relative_to(staging)).exists()
               and not filecmp.cmp(path, target / path.relative_to(staging), shallow=False)]
    if clashes:
        raise InputError(f"{archive}: would overwrite {len(clashes)} file(s) already in {target} that differ from "
                         f"the archive's (e.g. {clashes[0]}): refused; move them away")
    for path in files:
        destination = target / path.relative_to(staging)
        if not destination.exists():
            destination.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, destination)
