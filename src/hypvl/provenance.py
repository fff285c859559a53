"""Provenance of a result: which configuration, code, packages, data and model produced it, when, in how long."""

import datetime
import functools
import hashlib
import json
import subprocess
from importlib import metadata
from pathlib import Path

from hypvl.io import write_json

# key in the provenance record -> distribution name
PACKAGES = {
    "torch": "torch",
    "timm": "timm",
    "open_clip": "open_clip_torch",
    "numpy": "numpy",
    "hypvl": "hypvl",
}
CHUNK_SIZE = 1 << 20
DIGEST_RECORD = ".sha256.json"  # beside a checkpoint: its sha256, size and modification time when written


def config_hash(mapping) -> str:
    """First 12 hex digits of the sha256 of `mapping` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(mapping, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def file_digest(path, algorithm: str = "sha256") -> str:
    """Hex digest of the file at `path`."""
    digest = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_SIZE):
            digest.update(chunk)
    return digest.hexdigest()


def _git(*args: str) -> str | None:
    """Output of `git <args>` in the repository holding this source file, or None outside one."""
    try:
        result = subprocess.run(["git", *args], cwd=Path(__file__).resolve().parent, capture_output=True, text=True,
                                timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout if result.returncode == 0 else None


@functools.cache
def git_state() -> tuple[str, bool | None]:
    """(commit, dirty) of the code: the commit checked out, and whether a tracked file differs from it (untracked
    files do not count); ("unknown", None) outside a git repository. Read once per process."""
    commit = (_git("rev-parse", "HEAD") or "").strip()
    if not commit:
        return "unknown", None
    status = _git("status", "--porcelain", "--untracked-files=no")
    return commit, None if status is None else bool(status.strip())


def git_commit() -> str:
    """The commit checked out in the repository holding this source file, or "unknown" outside one."""
    return git_state()[0]


def package_versions() -> dict[str, str]:
    """Installed versions of the packages a result depends on ("not installed" where absent)."""
    versions = {}
    for key, distribution in PACKAGES.items():
        try:
            versions[key] = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            versions[key] = "not installed"
    return versions


def record_digest(path) -> None:
    """Write beside the file at `path` (`<path>.sha256.json`) its sha256 with the size and modification time it has
    now, so that the jobs reading it (`checkpoint_record`) need not hash it again: a ViT-L/16 checkpoint of 1.5 GB
    takes about a second to hash, in each of its evaluation jobs."""
    stat = Path(path).stat()
    write_json(f"{path}{DIGEST_RECORD}", {"sha256": file_digest(path), "bytes": stat.st_size,
                                          "mtime_ns": stat.st_mtime_ns})


def recorded_digest(path) -> str:
    """The sha256 of the file at `path`: the one `record_digest` wrote where the file still has the size and
    modification time recorded with it, else (no record, an unreadable one, a file changed since) computed."""
    stat = Path(path).stat()
    try:
        record = json.loads(Path(f"{path}{DIGEST_RECORD}").read_text(encoding="utf-8"))
        if (record["bytes"], record["mtime_ns"]) == (stat.st_size, stat.st_mtime_ns):
            return str(record["sha256"])
    except (OSError, ValueError, TypeError, KeyError):  # no record, or one this function cannot use: hashed
        pass
    return file_digest(path)


def checkpoint_record(path) -> dict:
    """What a result records of the checkpoint it measured: its path, sha256, size and modification time (the time
    lets `hypvl compare` skip re-hashing a checkpoint that has not changed since)."""
    stat = Path(path).stat()
    return {"checkpoint": str(path), "checkpoint_sha256": recorded_digest(path), "checkpoint_bytes": stat.st_size,
            "checkpoint_mtime_ns": stat.st_mtime_ns}


def utc_now() -> str:
    """The current time, UTC, ISO 8601 to the second (e.g. 2026-11-22T00:30:00+00:00)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def provenance(config_hash: str, seconds: float, **inputs) -> dict:
    """The `provenance` record of a metrics JSON: config hash, git commit and whether the tree was dirty, UTC date,
    package versions, seconds, and the `inputs` given (the run config and its hash, the data manifest's and the
    checkpoint's sha256)."""
    commit, dirty = git_state()
    return {
        "config_hash": config_hash,
        "git_commit": commit,
        "git_dirty": dirty,
        "date": utc_now(),
        "packages": package_versions(),
        "seconds": float(seconds),
        **inputs,
    }


def _flatten(mapping: dict, prefix: str = "") -> dict:
    """{dotted key: value} of a nested mapping."""
    flat = {}
    for key, value in mapping.items():
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def config_differences(first: dict, second: dict) -> list[str]:
    """`key: A vs B` for every dotted key whose value differs between two configs (`absent` where one lacks it)."""
    one, two = _flatten(first), _flatten(second)
    return [f"{key}: {json.dumps(one.get(key, 'absent'))} vs {json.dumps(two.get(key, 'absent'))}"
            for key in sorted(one.keys() | two.keys()) if one.get(key, "absent") != two.get(key, "absent")]
