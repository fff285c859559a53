"""Provenance of a result: which configuration, code and packages produced it, when, in how long."""

import datetime
import hashlib
import json
import subprocess
from importlib import metadata
from pathlib import Path

# key in the provenance record -> distribution name
PACKAGES = {
    "torch": "torch",
    "timm": "timm",
    "open_clip": "open_clip_torch",
    "numpy": "numpy",
    "hypvl": "hypvl",
}


def config_hash(mapping) -> str:
    """First 12 hex digits of the sha256 of `mapping` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(mapping, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def git_commit() -> str:
    """The commit checked out in the repository holding this source file, or "unknown" outside one."""
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    commit = result.stdout.strip()
    return commit if result.returncode == 0 and commit else "unknown"


def package_versions() -> dict[str, str]:
    """Installed versions of the packages a result depends on ("not installed" where absent)."""
    versions = {}
    for key, distribution in PACKAGES.items():
        try:
            versions[key] = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            versions[key] = "not installed"
    return versions


def utc_now() -> str:
    """The current time, UTC, ISO 8601 to the second (e.g. 2026-11-22T00:30:00+00:00)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def provenance(config_hash: str, seconds: float) -> dict:
    """The `provenance` record of a metrics JSON: config hash, git commit, UTC date, package versions, seconds."""
    return {
        "config_hash": config_hash,
        "git_commit": git_commit(),
        "date": utc_now(),
        "packages": package_versions(),
        "seconds": float(seconds),
    }
