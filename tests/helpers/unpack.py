"""Archives that would exhaust a disk's inodes, for the unpacking faults and the bad-input corpus."""

import io
import tarfile


def empty_files(count: int) -> bytes:
    """A tar.gz of `count` empty files (a few kB)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as handle:
        for index in range(count):
            handle.addfile(tarfile.TarInfo(f"e/{index}"))
    return buffer.getvalue()
