"""`oracle_regions.jsonl`: the smoke world's object boxes beside a raw corpus that carries none (RedCaps-,
CC3M-like), read by the grounding step's oracle box source in place of a detector.

One JSON line per sample: {"key": str, "regions": [{"text": str, "box": [x1, y1, x2, y2] pixels, "score"}]}.
"""

import json
from collections.abc import Iterable
from pathlib import Path

from hypvl.errors import InputError
from hypvl.io import atomic_write, json_text

ORACLE_REGIONS = "oracle_regions.jsonl"


def write_oracle_regions(folder: Path, entries: Iterable[tuple[str, list[dict]]]) -> Path:
    """Write (key, regions) entries to `<folder>/oracle_regions.jsonl`, atomically; returns the path."""
    path = Path(folder) / ORACLE_REGIONS
    with atomic_write(path, mode="w", encoding="utf-8") as handle:
        for key, regions in entries:
            handle.write(json_text({"key": key, "regions": regions}, path) + "\n")
    return path


def read_oracle_regions(path: Path) -> dict[str, list[dict]]:
    """key -> regions [{"text", "box" [x1, y1, x2, y2] pixels, "score"}] from an `oracle_regions.jsonl`."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: oracle box file not found (the oracle box source needs the world's boxes)")
    regions = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        where = f"{path}: line {number}"
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(entry, dict) or not isinstance(entry.get("key"), str) or not isinstance(
                entry.get("regions"), list):
            raise InputError(f"{where}: should be {{\"key\": str, \"regions\": [...]}}")
        for region in entry["regions"]:
            if not (isinstance(region, dict) and isinstance(region.get("text"), str)
                    and isinstance(region.get("box"), list) and len(region["box"]) == 4):
                raise InputError(f"{where}: region {region!r} needs text and a 4-number box")
        regions[entry["key"]] = entry["regions"]
    return regions
