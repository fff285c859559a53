"""Errors raised on bad input: always name the file (and record) and what is wrong."""


class InputError(ValueError):
    """A file, record or setting given to hypvl is malformed or missing."""
