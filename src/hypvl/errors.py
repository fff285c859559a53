"""Errors raised on bad input: always name the file (and record) and what is wrong, in one line; and a run stopped on
request."""

import math

LISTED = 5  # names a refusal lists before it counts the rest


class InputError(ValueError):
    """A file, record or setting given to hypvl is malformed or missing."""


class Stopped(Exception):
    """A run stopped by a signal after saving what it needs to continue: one line, exit status `status` (128 + the
    signal, as a shell reports a process the signal killed)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


def listed(names, limit: int = LISTED) -> str:
    """The first `limit` of `names` and a count of the rest, for a one-line message (a refusal never lists
    thousands of keys)."""
    names = [str(name) for name in names]
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def non_finite(value, key: str = "") -> str | None:
    """The dotted key of the first number in `value` (nested dicts and lists) that is not finite, else None."""
    if isinstance(value, float) and not math.isfinite(value):
        return key or "(the value)"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for name, item in items:
        found = non_finite(item, f"{key}.{name}" if key else str(name))
        if found is not None:
            return found
    return None


def require(module: str, extra: str):
    """Import `module`, which hypvl's optional `extra` installs; InputError naming the extra where it is missing (a
    module missing inside it, a broken installation, is raised as it is)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name is None or error.name.split(".")[0] != module.split(".")[0]:
            raise
        raise InputError(f"{module} is not installed: it comes with hypvl's [{extra}] extra "
                         f"(pip install 'hypvl[{extra}]', or '.[{extra}]' in a checkout)") from None
