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


# the largest magnitude of a number read from outside (a config, spec, expected CSV, metric JSON): no setting, printed
# number or metric of the suite comes near it, and every number within it converts to a float
NUMBER_LIMIT = 1e15


def shown(value, width: int = 40) -> str:
    """`repr(value)`, cut to `width` characters (a 400-digit number is named, not printed)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**width:
        return f"an integer of about {int(abs(value).bit_length() * math.log10(2)) + 1} digits"
    text = repr(value)
    return text if len(text) <= width else f"{text[:width]}... ({len(text)} characters)"


def number_problem(value, limit: float = NUMBER_LIMIT) -> str | None:
    """Why `value` is no number hypvl reads (`not a finite number`: not an int or float, NaN or infinite; `beyond
    ±limit`), or None; a message says `<name> is {shown(value)}, {problem}`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and not math.isfinite(value)):
        return "not a finite number"
    if abs(value) > limit:  # an int against a float compares exactly: a 400-digit int never overflows here
        return f"beyond ±{limit:g}"
    return None


def first_key(value, bad, key: str = "") -> str | None:
    """The dotted key of the first leaf of `value` (nested dicts and lists) for which `bad(leaf)` holds, else None."""
    if not isinstance(value, (dict, list, tuple)):
        return (key or "(the value)") if bad(value) else None
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for name, item in items:
        found = first_key(item, bad, f"{key}.{name}" if key else str(name))
        if found is not None:
            return found
    return None


def non_finite(value, key: str = "", limit: float = math.inf) -> str | None:
    """The dotted key of the first number in `value` (nested dicts and lists) that is not finite (or, given `limit`,
    beyond ±limit: a 400-digit integer is finite, and float() of it fails), else None."""
    return first_key(value, lambda leaf: isinstance(leaf, (int, float)) and not isinstance(leaf, bool)
                     and number_problem(leaf, limit) is not None, key)


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
