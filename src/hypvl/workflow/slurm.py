"""What the SLURM executor plugin needs of the cluster it submits to, checked as a run starts: a command that knows
its jobs' states.

The plugin asks `sacct` for its jobs' states wherever that command exists (its default `--slurm-status-command`). A
cluster that keeps no accounting (`AccountingStorageType=accounting_storage/none`, common on small clusters) has
`sacct` but no job in it: every query comes back empty and Snakemake waits for jobs that ended long ago, forever.
There `squeue` knows the jobs (for `MinJobAge` seconds after they end: the plugin warns where that is short)."""

import subprocess

NO_ACCOUNTING = "accounting_storage/none"


def accounting_storage(timeout: float = 30.0) -> str | None:
    """The cluster's `AccountingStorageType` (`scontrol show config`), or None where it cannot be read."""
    try:
        shown = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in shown.stdout.splitlines() if shown.returncode == 0 else ():
        key, _, value = line.partition("=")
        if key.strip() == "AccountingStorageType":
            return value.strip()
    return None


def status_command(asked: str | None, accounting: str | None) -> tuple[str | None, str]:
    """The status command a run uses (`asked`: the plugin's setting) on a cluster of `accounting`, and the line that
    says which: `squeue` where `sacct` is asked of a cluster without accounting."""
    if asked == "sacct" and accounting == NO_ACCOUNTING:
        return "squeue", (f"this SLURM cluster keeps no accounting (AccountingStorageType={NO_ACCOUNTING}): sacct "
                          "knows none of its jobs, so their states come from squeue (--slurm-status-command squeue)")
    known = f"AccountingStorageType={accounting}" if accounting else "the cluster's configuration unread"
    return asked, f"SLURM job states from {asked} ({known})"
