"""Unpacking a fetched archive (zip, tar, tar.gz) into a dataset folder, within limits.

An archive is unpacked only when its members add up to at most a limit (the manifest's `unpack_max_bytes`, else
UNPACK_RATIO times the archive's size) and fit the disk; it is unpacked into a folder beside the target and moved
into place once whole, so a failed unpacking (a zip bomb, a truncated archive, a full disk) leaves nothing of it
behind, and a file already there is never overwritten by a different one. zipfile and tarfile (its "data" filter)
keep every member inside the folder. An archive whose members all sit in one top folder (GitHub's source archives:
`<repo>-<commit>/`) may be unpacked without it (`strip_top`), so that the repository's files land in the dataset's
folder itself.
"""

import filecmp
import os
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from pathlib import Path

from hypvl.errors import InputError

UNPACK_RATIO = 100  # an archive may unpack to this many times its size, unless the manifest says how much
UNPACK_FLOOR = 16 << 20  # ... and to this many bytes in any case


def _unpacked_size(archive: Path) -> int:
    """The bytes `archive`'s members add up to, from its index (zipfile never writes more than a member declares;
    a tar member is as long as its header says)."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as handle:
            return sum(info.file_size for info in handle.infolist())
    with tarfile.open(archive) as handle:
        return sum(member.size for member in handle.getmembers() if member.isfile())


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


def unpack(archive: Path, target: Path, limit: int | None = None, strip_top: bool = False) -> None:
    """Extract `archive` into `target` once (a `.<archive>.unpacked` marker records it): only when its members add
    up to at most `limit` bytes (default: UNPACK_RATIO times the archive, at least UNPACK_FLOOR) and fit the disk;
    into a folder beside, moved into `target` once whole (`strip_top`: the contents of its one top folder). A failure
    leaves nothing of it behind."""
    marker = archive.with_name(f".{archive.name}.unpacked")
    if marker.exists():
        return
    target.mkdir(parents=True, exist_ok=True)
    try:
        size = _unpacked_size(archive)
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, zlib.error) as error:
        raise InputError(f"{archive}: cannot unpack: {error}") from None
    limit = limit or max(UNPACK_RATIO * archive.stat().st_size, UNPACK_FLOOR)
    if size > limit:
        raise InputError(f"{archive}: unpacks to {size} bytes, over the limit of {limit} (the manifest's "
                         f"unpack_max_bytes, or {UNPACK_RATIO} x the archive): refused (a zip bomb?)")
    free = shutil.disk_usage(target).free
    if size > free:
        raise InputError(f"{archive}: unpacks to {size} bytes, but {target} has {free} free: refused")
    staging = Path(tempfile.mkdtemp(dir=target, prefix=f".{archive.name}.", suffix=".unpacking"))
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as handle:  # extractall drops "..", absolute names
                handle.extractall(staging)
        else:
            with tarfile.open(archive) as handle:
                handle.extractall(staging, filter="data")
        _move_into(_top_folder(staging, archive) if strip_top else staging, target, archive)
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, zlib.error) as error:
        raise InputError(f"{archive}: cannot unpack: {error}; nothing of it was kept") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # made above: only this archive's files
    marker.touch()


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
