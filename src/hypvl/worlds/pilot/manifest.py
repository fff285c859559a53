"""The manifest a pilot run fetches with: the real one, each published digest of a file the pilot world stands in
for replaced by the stand-in's, with `checksum_source` saying so. URLs, paths, unpacking, Hub repositories and
revisions, manual steps and `null` digests (recorded on the first fetch) stay as they are, so acquisition runs the
real manifest's every path."""

import copy
from pathlib import Path

import yaml

from hypvl.io import atomic_write

PILOT_SOURCE = "hypvl pilot world: the digest of its stand-in for the file that"


def _restamp(item: dict, served: dict | None) -> dict:
    """`item` (a file or a manual step's expected file) with its published digests replaced by those of `served`."""
    published = [algorithm for algorithm in ("sha256", "md5") if item.get(algorithm)]
    if not published or served is None:
        return item
    item = {**item, **{algorithm: served[algorithm] for algorithm in published}}
    item["checksum_source"] = f"{PILOT_SOURCE} {item['checksum_source']} publishes"
    return item


def pilot_manifest(datasets: dict, served: dict[str, dict[str, str]]) -> dict:
    """The manifest's `datasets` with the digests of the files the pilot world served (by URL) or left (by
    `<dataset>:<path>`) replaced."""
    derived = copy.deepcopy(datasets)
    for name, entry in derived.items():
        if "files" in entry:
            entry["files"] = [_restamp(item, served.get(item["url"])) for item in entry["files"]]
        if entry.get("manual"):
            entry["expected"] = [_restamp(item, served.get(f"{name}:{item['path']}")) if isinstance(item, dict)
                                 else item for item in entry["expected"]]
    return derived


def write_manifest(path: Path, datasets: dict, served: dict[str, dict[str, str]], extra: dict | None = None) -> None:
    """Write the pilot manifest of `datasets` at `path` (`extra`: further top-level keys kept, e.g. the weights
    manifest's `pretrained`)."""
    body = {**(extra or {}), "datasets": pilot_manifest(datasets, served)}
    with atomic_write(Path(path)) as handle:
        handle.write("# Written by the pilot world (hypvl.worlds.pilot): the real manifest, each published digest of a "
                     "file it stands in for replaced by the stand-in's.\n")
        yaml.safe_dump(body, handle, sort_keys=False, width=120)
