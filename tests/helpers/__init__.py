"""What the tests share: the repository's root, fixtures built in code (formats, replication, plans, bad inputs) and
the pieces several test files use (tiny models, training shards, evaluation sets, workflow commands), one module per
subject. tests/conftest.py holds the pytest fixtures; tests/data/ the fixture files."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
