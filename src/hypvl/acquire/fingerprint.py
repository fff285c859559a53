"""The data manifest hash of a data folder: what a result records about the data it was measured on."""

import hashlib
from pathlib import Path

from hypvl.provenance import file_digest

from .fetch import CHECKSUM_RECORD, HUB_RECORD

MANIFEST = "manifest.json"  # a generated world's, at its root (hypvl.worlds.smoke.build writes it)
MANIFESTS = (MANIFEST, CHECKSUM_RECORD, HUB_RECORD)
DEPTH = 3  # dataset folders sit at most this deep under the data folder (e.g. eval/classification/<name>)


def data_manifest_hash(data_dir) -> str | None:
    """sha256 over the manifests under `data_dir` (each one's path and sha256, in path order): the smoke world's
    manifest.json and the records `hypvl acquire` leaves in each dataset folder (SHA256SUMS, HUB_COMMITS), up to
    DEPTH folders down; None when there is none."""
    root = Path(data_dir)
    found = sorted({path for depth in range(DEPTH + 1) for name in MANIFESTS
                    for path in root.glob("*/" * depth + name) if path.is_file()})
    if not found:
        return None
    digest = hashlib.sha256()
    for path in found:
        digest.update(f"{path.relative_to(root).as_posix()}\0{file_digest(path)}\n".encode())
    return digest.hexdigest()
