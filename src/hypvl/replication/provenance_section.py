"""The Provenance section of the reports: where the numbers of compare frames come from, every string of the metric
JSONs escaped."""

import pandas as pd

from hypvl.provenance import git_commit, utc_now
from hypvl.replication.compare import split_joined, table_provenance
from hypvl.replication.markdown import code, escape


def provenance_section(frame: pd.DataFrame, per_row: bool = True) -> list[str]:
    """Where the numbers of compare frame(s) come from: scale, run config, config hashes, code (commit, dirty tree,
    packages), data and checkpoints (sha256, first 12 digits; per row, or only counted), date range; and this
    rendering."""
    record = table_provenance(frame)
    dates = (f"{record['first_date']} to {record['last_date']}" if record["first_date"] != record["last_date"]
             else record["first_date"]) if record["first_date"] else "–"

    def codes(values, digits=None):
        return ", ".join(code(value[:digits]) for value in values) or "–"

    checkpoints = ([f"{escape(row)} {codes(split_joined(lines['checkpoint_sha256']), 12)}"
                    for row, lines in frame.groupby("row", sort=False) if split_joined(lines["checkpoint_sha256"])]
                   if per_row else [f"{len(record['checkpoint_sha256'])} distinct, named in each table's report"])
    dirty = {"True": "yes", "False": "no"}
    return [
        "## Provenance",
        "",
        f"- scale: {code(record['scale'])}",
        f"- measured cells: {record['n_measured_cells']} of {len(frame)}",
        f"- run config of the metric JSONs (settings every model of the run shares): "
        f"{codes(record['run_config_hash'])}",
        f"- config hashes of the metric JSONs: {codes(record['config_hash'])}",
        f"- git commits of the metric JSONs: {codes(record['git_commit'])}; uncommitted changes: "
        f"{', '.join(escape(dirty.get(value, value)) for value in record['git_dirty']) or '–'}",
        f"- packages: {'; '.join(map(escape, record['packages'])) or '–'}",
        f"- data manifest (sha256): {codes(record['data_manifest_hash'], 12)}",
        f"- checkpoints (sha256): {'; '.join(checkpoints) or '–'}",
        f"- metric JSONs dated: {escape(dates)}",
        f"- report rendered: {utc_now()} at commit `{git_commit()}`",
    ]
