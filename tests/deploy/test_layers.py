"""Imports point down the data flow (docs/architecture.md, Layers), nothing outside the generated worlds imports them,
and planning imports no torch nor Pillow.

Every `hypvl` import in `src/hypvl`, at module level or inside a function, is checked against the layer
order below: a module may import its own package and packages of lower layers only.
"""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO

SRC = REPO / "src" / "hypvl"
# top-level module or package -> layer; the same layer may not import each other (train and evaluate)
# tasks: the torch-free task registry (ids, metrics, units), read by spec, evaluate and replication alike
LAYERS = {
    "errors": 0, "yaml_text": 0, "io": 1, "config": 1,
    "provenance": 2,
    "methods": 3,
    "runtime": 4, "geometry": 4,
    "data": 5,
    "acquire": 6,
    "worlds": 7,
    "tasks": 8,
    "spec": 9, "grounding": 9,
    "losses": 10,
    "models": 11,
    "outside": 12,
    "train": 13, "evaluate": 13,
    "replication": 14,
    "workflow": 15, "cli": 16,
}


def unit(parts: tuple[str, ...]) -> str:
    """The top-level module or package of `hypvl.<parts>`."""
    return parts[0].removesuffix(".py")


def hypvl_imports(path: Path) -> list[tuple[int, str]]:
    """(line, top-level unit) of every hypvl import in a source file, relative ones resolved."""
    package = path.relative_to(SRC).parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1]
            names = [".".join(("hypvl", *base, *([node.module] if node.module else [])))]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "hypvl" and len(parts) > 1:
                found.append((node.lineno, parts[1]))
    return found


def upward_imports() -> list[str]:
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        here = unit(path.relative_to(SRC).parts)
        if here == "__init__":
            continue
        for line, target in hypvl_imports(path):
            if target != here and LAYERS[target] >= LAYERS[here]:
                bad.append(f"{path.relative_to(SRC.parent)}:{line}: {here} (layer {LAYERS[here]}) imports {target} "
                           f"(layer {LAYERS[target]})")
    return bad


def test_every_unit_has_a_layer():
    units = {unit(p.relative_to(SRC).parts) for p in SRC.iterdir() if p.suffix == ".py" or p.is_dir()}
    assert units - {"__init__", "__pycache__"} == set(LAYERS)


def test_imports_point_down_the_data_flow():
    assert upward_imports() == []


WORLDS = ("worlds",)  # the generated worlds (smoke, pilot): written in the real formats
# cli registers their commands; the task registry's smoke scale is the smoke world's sets (their order, and the
# chance levels of its class counts)
WORLD_USERS = ("cli.py", "tasks.py")


def world_imports(root: Path = SRC) -> list[str]:
    """Every import of a generated world from outside the worlds: the real path never depends on generated data."""
    bad = []
    for path in sorted(root.rglob("*.py")):
        inside = ".".join(path.relative_to(root).parts)
        if inside.startswith(WORLDS) or inside in WORLD_USERS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                     [_resolved(path.relative_to(root), node)] if isinstance(node, ast.ImportFrom) else [])
            bad += [f"{path.relative_to(root.parent)}:{node.lineno}: imports {name}" for name in names
                    if name.removeprefix("hypvl.").startswith(WORLDS)]
    return bad


def _resolved(relative: Path, node: ast.ImportFrom) -> str:
    """The absolute module an ImportFrom names (relative ones resolved against the file's package)."""
    if node.level == 0:
        return node.module or ""
    package = relative.parts[:-1]
    return ".".join(("hypvl", *package[:len(package) - node.level + 1], *([node.module] if node.module else [])))


def test_nothing_outside_the_generated_worlds_imports_them(tmp_path):
    assert world_imports() == []
    fake = tmp_path / "hypvl"  # the check itself: a real reader reaching into the smoke world is reported
    (fake / "worlds" / "smoke").mkdir(parents=True)
    (fake / "acquire").mkdir()
    (fake / "acquire" / "fingerprint.py").write_text("from ..worlds.smoke.build import MANIFEST\n")
    assert world_imports(fake) == ["hypvl/acquire/fingerprint.py:1: imports hypvl.worlds.smoke.build"]


def test_an_upward_import_is_caught(tmp_path, monkeypatch):
    """The check itself: a data module importing the trainer is reported."""
    fake = tmp_path / "hypvl"
    (fake / "data").mkdir(parents=True)
    (fake / "train").mkdir()
    (fake / "data" / "reader.py").write_text("def f():\n    from hypvl.train.trainer import train\n")
    (fake / "train" / "loop.py").write_text("from ..data import reader\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", fake)
    assert [line.split(": ", 1)[1] for line in upward_imports()] == ["data (layer 5) imports train (layer 13)"]


def modules(package: str) -> list[str]:
    """`hypvl.<package>` and each of its modules."""
    return [f"hypvl.{package}", *(f"hypvl.{package}.{path.stem}" for path in sorted((SRC / package).glob("*.py"))
                                  if path.stem != "__init__")]


# the plan and each of its stage modules (hypvl.workflow), and what planning reads (the specs, each module)
PLANNING = [*modules("workflow"), "hypvl.tasks", "hypvl.config", *modules("spec")]


# what planning must not load: every `snakemake` call plans (scipy.ndimage alone took 0.47 s of 1.06 s)
HEAVY = ("torch", "torchvision", "timm", "open_clip", "transformers", "numpy", "scipy", "PIL")
# a hypvl import statement of the Snakefile or a rule file, at its top or inside a function
WORKFLOW_IMPORT = re.compile(r"^[ \t]*(from[ \t]+hypvl[\w.]*[ \t]+import[ \t]+(?:\([^)]*\)|[^\n#]+)"
                             r"|import[ \t]+hypvl[^\n#]*)", re.MULTILINE)


def heavy_after(code: str) -> str:
    """The HEAVY modules loaded once `code` has run in a fresh interpreter, as a printed list."""
    probe = f"import sys\n{code}\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()


def workflow_imports() -> list[str]:
    """Every hypvl import statement of the Snakefile and workflows/*.smk, as written."""
    files = [REPO / "Snakefile", *sorted((REPO / "workflows").glob("*.smk"))]
    texts = [path.read_text(encoding="utf-8") for path in files]
    return sorted({" ".join(found.split()) for text in texts for found in WORKFLOW_IMPORT.findall(text)})


@pytest.mark.parametrize("module", PLANNING)
def test_planning_imports_no_torch(module):
    """Nor the numerical stack, torchvision, transformers or Pillow."""
    assert heavy_after(f"import {module}") == "[]"


def test_the_snakefile_plans_without_torch_or_pillow():
    """What the Snakefile and its rule files import, all in one process, loads none of HEAVY (Pillow came in through
    outside.sources -> acquire.fetch -> data.formats.common)."""
    statements = workflow_imports()
    assert any("hypvl.workflow import Plan" in s for s in statements) and any("hypvl.config" in s for s in statements)
    assert heavy_after("\n".join(statements)) == "[]"
    assert heavy_after("import PIL.Image") == "['PIL']"  # the probe itself sees a heavy import
