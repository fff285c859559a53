"""The acquisition manifest `sources.yaml` (and the weights manifest, which follows its schema): loaded and checked.

Each dataset lists HTTPS files (`files`: url, path, sha256 or null, optional md5, checksum_source with any digest,
optional unpack/unpack_to/unpack_max_bytes/unpack_max_members/unpack_strip_top), a Hugging Face Hub snapshot
(`hf_snapshot`: repo, revision, path, allow_patterns, repo_type; a revision that is a commit names its
revision_source), or is `manual: true` with instructions and the files the human step must leave (`expected`). Every
path stays inside the destination folder; every URL is https.
"""

from pathlib import Path

import yaml

from hypvl.errors import InputError
from hypvl.yaml_text import error_parts, safe_load

from hypvl.data.formats.common import escapes_root

SOURCES_PATH = Path(__file__).with_name("sources.yaml")
HEX_DIGITS = frozenset("0123456789abcdef")


def load_sources(path=SOURCES_PATH):
    """Datasets of the manifest at `path`: {name: entry}, each entry checked for its shape."""
    path = Path(path)
    try:
        manifest = safe_load(path.read_text())
    except OSError as error:
        raise InputError(f"{path}: cannot read the acquisition manifest: {error}") from error
    except yaml.YAMLError as error:
        at, problem = error_parts(path, error)
        raise InputError(f"{at}: cannot read the acquisition manifest: {problem}") from None
    datasets = manifest.get("datasets") if isinstance(manifest, dict) else None
    if not isinstance(datasets, dict) or not datasets:
        raise InputError(f"{path}: no 'datasets' mapping")
    for name, entry in datasets.items():
        _check_entry(entry, f"{path}: dataset {name!r}")
    return datasets


def _check_entry(entry, where):
    """Raise InputError (prefixed by `where`) unless `entry` is a well-formed manifest entry."""
    if not isinstance(entry, dict):
        raise InputError(f"{where}: not a mapping")
    if entry.get("manual"):
        if not str(entry.get("instructions", "")).strip():
            raise InputError(f"{where}: manual dataset without instructions")
        if not isinstance(entry.get("expected"), list) or not entry["expected"]:
            raise InputError(f"{where}: manual dataset without its 'expected' files")
        for i, item in enumerate(entry["expected"]):
            if isinstance(item, dict):
                _check_digests(item, f"expected file {i}", where)
        _check_inside_dest(entry, where)
        return
    if "files" not in entry and "hf_snapshot" not in entry:
        raise InputError(f"{where}: needs 'files', 'hf_snapshot' or 'manual: true'")
    for i, item in enumerate(entry.get("files", [])):
        if not isinstance(item, dict) or not {"url", "path"} <= item.keys() or "sha256" not in item:
            raise InputError(f"{where}: file {i} needs url, path and sha256 (null if unpublished)")
        _check_digests(item, f"file {i}", where)
        for key, unit in (("unpack_max_bytes", "bytes"), ("unpack_max_members", "members")):
            limit = item.get(key)
            if limit is not None and not (isinstance(limit, int) and not isinstance(limit, bool) and limit > 0):
                raise InputError(f"{where}: file {i} {key} {limit!r} must be a positive whole number of {unit}")
        if not isinstance(item.get("unpack_strip_top", False), bool):
            raise InputError(f"{where}: file {i} unpack_strip_top must be true or false")
    snapshot = entry.get("hf_snapshot")
    if snapshot is not None and not (isinstance(snapshot, dict) and
                                     {"repo", "revision", "path"} <= snapshot.keys()):
        raise InputError(f"{where}: 'hf_snapshot' needs repo, revision and path")
    if snapshot is not None and pinned(snapshot["revision"]) and not snapshot.get("revision_source"):
        raise InputError(f"{where}: hf_snapshot pins commit {snapshot['revision']} without its revision_source")
    _check_inside_dest(entry, where)
    insecure = [item["url"] for item in entry.get("files", []) if not str(item["url"]).startswith("https://")]
    if insecure:
        raise InputError(f"{where}: {insecure[0]} is not an https URL")


def _check_digests(item: dict, what: str, where: str) -> None:
    """InputError unless the item's sha256 and md5 (where given) are hex digests with their checksum_source."""
    for algorithm, length in (("sha256", 64), ("md5", 32)):
        digest = item.get(algorithm)
        if digest is not None and not is_hex(digest, length):
            raise InputError(f"{where}: {what} {algorithm} {digest!r} is not {length} hex digits in quotes")
    if (item.get("sha256") or item.get("md5")) and not item.get("checksum_source"):
        raise InputError(f"{where}: {what} pins a digest without its checksum_source (where it was published)")


def expected_files(entry) -> list[dict]:
    """A manual dataset's `expected` files as {path, and sha256, md5, checksum_source where published}."""
    return [item if isinstance(item, dict) else {"path": item} for item in entry["expected"]]


def is_hex(digest, length: int) -> bool:
    """True for a string of `length` hex digits."""
    return isinstance(digest, str) and len(digest) == length and all(c in HEX_DIGITS for c in digest.lower())


def pinned(revision) -> bool:
    """True when a Hub revision is a full commit hash (a branch or tag may move)."""
    return is_hex(revision, 40)


def _check_inside_dest(entry, where):
    """InputError unless every path of `entry` (files' `path` and `unpack_to`, the snapshot's `path`, a manual
    dataset's `expected` files) is a relative path that stays inside the destination folder."""
    named = [(f"file {i} {key}", item[key]) for i, item in enumerate(entry.get("files", []))
             for key in ("path", "unpack_to") if key in item]
    named += [("hf_snapshot path", entry["hf_snapshot"]["path"])] if "hf_snapshot" in entry else []
    named += [(f"expected file {i}", item.get("path")) for i, item in enumerate(expected_files(entry))] \
        if entry.get("manual") else []
    for what, relative in named:
        if not isinstance(relative, str) or not relative or escapes_root(relative):
            raise InputError(f"{where}: {what} {relative!r} must be a relative path inside the destination folder")


def trust(entry) -> str:
    """How a dataset's downloads are verified, in a few words (`hypvl acquire --list`)."""
    if entry.get("manual"):
        return "manual"
    files = entry.get("files", [])
    published = sum(bool(item["sha256"] or item.get("md5")) for item in files)
    parts = [f"{published}/{len(files)} files checksummed"] if files else []
    if "hf_snapshot" in entry:
        revision = entry["hf_snapshot"]["revision"]
        parts.append("Hub commit pinned" if pinned(revision) else f"Hub {revision!r} (pinned on first fetch)")
    return ", ".join(parts)
