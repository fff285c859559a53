"""Edits that damage a fixture file the way real files go wrong (a JSON key gone or changed, a file cut short, a
shard's member rewritten): what the bad-input and rejection tests apply to the format fixtures."""

import json
from pathlib import Path

from hypvl.data.formats.shards import iter_tar_samples, write_tar_samples


def edit_json(path: Path, edit) -> None:
    """Load a JSON file, let `edit` change it in place, write it back."""
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def truncate(path: Path, fraction: float = 0.5) -> None:
    """Keep only the first `fraction` of the file's bytes."""
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * fraction)])


def edit_shard(path: Path, key: str, edit) -> None:
    """Rewrite one shard with `edit(members)` applied to the members of sample `key`."""
    samples = [(k, dict(members)) for k, _, members in iter_tar_samples(path)]
    for k, members in samples:
        if k == key:
            edit(members)
    write_tar_samples(path, samples)


def edit_shard_json(path: Path, key: str, edit) -> None:
    """Rewrite the `.json` member of sample `key` with `edit(meta)` applied."""

    def change(members):
        meta = json.loads(members["json"])
        edit(meta)
        members["json"] = json.dumps(meta).encode()

    edit_shard(path, key, change)


def delete(key):
    """An edit deleting `key` from a dict."""
    return lambda data: data.pop(key)


def assign(key, value):
    """An edit setting `key` of a dict."""
    return lambda data: data.__setitem__(key, value)
