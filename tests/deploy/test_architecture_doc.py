"""docs/architecture.md stays true to the code: its layer table is `LAYERS` (tests/deploy/test_layers.py), its layout
names every package and top-level module of src/hypvl and nothing that is not there, its flow names every rule of the
workflow, and its verdicts are the ones compare gives. The document's last section says what each check reads."""

import re
from pathlib import Path

from test_layers import LAYERS, SRC

from helpers import REPO

DOC = REPO / "docs" / "architecture.md"
CODE = re.compile(r"`([^`]+)`")
# a code span that reads as the name of a module, file or folder (`lorentz`, `weights.yaml`, `claims/`)
MODULE_LIKE = re.compile(r"[a-z_][a-z0-9_]*(?:\.py|\.yaml)?/?")
RULE = re.compile(r"^\s*rule\s+(\w+)\s*:", re.MULTILINE)


def section(title: str, doc: Path = DOC) -> list[str]:
    """The lines of the section `## <title>` of the document, up to the next `## ` heading."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    starts = [number for number, line in enumerate(lines) if line.strip() == f"## {title}"]
    assert len(starts) == 1, f"{doc}: expected one section '## {title}', found {len(starts)}"
    start = starts[0] + 1
    end = next((number for number in range(start, len(lines)) if lines[number].startswith("## ")), len(lines))
    return lines[start:end]


def table(lines: list[str], header: str) -> list[list[str]]:
    """The body rows (lists of cells) of the one markdown table among `lines` whose first header cell is `header`."""
    tables, current = [], []
    for line in [*lines, ""]:
        if line.lstrip().startswith("|"):
            current.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif current:
            tables.append(current)
            current = []
    found = [rows for rows in tables if rows[0][0] == header]
    assert len(found) == 1, f"expected one table headed {header!r}, found {len(found)}"
    return found[0][2:]  # past the header and the delimiter row


def single_span(cell: str) -> str:
    """The text of a cell that is exactly one code span."""
    match = re.fullmatch(r"`([^`]+)`", cell)
    assert match, f"expected one code span, not {cell!r}"
    return match.group(1)


def documented_layers(doc: Path = DOC) -> dict[str, int]:
    """Unit -> layer, as the document's Layers table writes it."""
    layers: dict[str, int] = {}
    for layer, units, *_ in table(section("Layers", doc), "Layer"):
        assert layer.isdigit(), f"Layers: {layer!r} is not a layer number"
        for name in CODE.findall(units):
            assert name not in layers, f"Layers: {name} is in layers {layers[name]} and {layer}"
            layers[name] = int(layer)
    return layers


def documented_units(doc: Path = DOC) -> dict[str, str]:
    """`name.py` or `path/` -> what the document's Layout says it holds."""
    units: dict[str, str] = {}
    for first, holds, *_ in table(section("Layout", doc), "Unit"):
        name = single_span(first)
        assert name not in units, f"Layout: {name} has two rows"
        units[name] = holds
    return units


def package_units(src: Path = SRC) -> set[str]:
    """Every top-level module (`name.py`) and every package, nested ones included (`path/`), of the source tree."""
    modules = {path.name for path in src.glob("*.py") if path.name != "__init__.py"}
    packages = {f"{path.parent.relative_to(src).as_posix()}/" for path in src.rglob("__init__.py")
                if path.parent != src}
    return modules | packages


def stale_names(units: dict[str, str], src: Path = SRC) -> list[str]:
    """The code spans of a package's row that read as a module, file or folder name and name nothing in its folder."""
    stale = []
    for unit, holds in units.items():
        if not unit.endswith("/"):
            continue
        folder = src / unit
        for name in CODE.findall(holds):
            bare = name.rstrip("/")
            if MODULE_LIKE.fullmatch(name) and not ((folder / bare).exists() or (folder / f"{bare}.py").is_file()):
                stale.append(f"{unit}: `{name}`")
    return stale


def test_layer_table_is_the_enforced_one():
    assert documented_layers() == LAYERS


def test_layout_names_every_package_and_top_level_module():
    documented, present = set(documented_units()), package_units()
    assert sorted(present - documented) == [], "in src/hypvl, not in the document's Layout"
    assert sorted(documented - present) == [], "in the document's Layout, not in src/hypvl"


def test_layout_names_only_what_is_there():
    assert stale_names(documented_units()) == []
    paths = [name for first, *_ in table(section("Layout"), "Path") for name in CODE.findall(first)]
    assert paths, "the Layout's Path table names no path"
    assert [path for path in paths if not (REPO / path.rstrip("/")).exists()] == []


def test_flow_names_every_rule():
    rules = {name for path in [REPO / "Snakefile", *sorted((REPO / "workflows").glob("*.smk"))]
             for name in RULE.findall(path.read_text(encoding="utf-8"))}
    assert rules, "no rule found in the Snakefile and workflows/*.smk"
    flow = "\n".join(section("The flow"))
    assert sorted(rule for rule in rules if not re.search(rf"\b{rule}\b", flow)) == []


def test_verdicts_are_the_ones_compare_gives():
    from hypvl.replication.compare import VERDICTS

    assert [single_span(first) for first, *_ in table(section("Verdicts"), "Verdict")] == list(VERDICTS)


def test_a_stale_document_is_caught(tmp_path):
    """The checks themselves: a layer moved, a package row dropped, a module renamed, each seen."""
    text = DOC.read_text(encoding="utf-8")
    moved = tmp_path / "moved.md"
    moved.write_text(text.replace("| 16 | `cli` |", "| 15 | `cli` |"), encoding="utf-8")
    assert documented_layers(moved) != LAYERS
    dropped = tmp_path / "dropped.md"
    dropped.write_text(re.sub(r"^\| `losses/` \|.*\n", "", text, flags=re.MULTILINE), encoding="utf-8")
    assert "losses/" not in documented_units(dropped)
    renamed = {**documented_units(), "geometry/": "`lorentz`, `hyperboloid`"}
    assert stale_names(renamed) == ["geometry/: `hyperboloid`"]


def test_a_new_package_or_module_must_be_documented(tmp_path):
    """A module or package added to the tree is a unit the document lacks."""
    fake = tmp_path / "hypvl"
    (fake / "geometry").mkdir(parents=True)
    (fake / "geometry" / "__init__.py").write_text("")
    (fake / "newthing.py").write_text("")
    (fake / "geometry" / "sub").mkdir()
    (fake / "geometry" / "sub" / "__init__.py").write_text("")
    assert package_units(fake) == {"newthing.py", "geometry/", "geometry/sub/"}
