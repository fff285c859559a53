"""MkDocs hook (mkdocs.yml `hooks:`): the manual's config reference, generated from the config schema as the site is
built, so that it cannot go stale. `config-reference.md` is no file of the repository: `on_files` adds it to the
site, written from `src/hypvl/config/schema.yaml` (every parameter: path, type, description), the smoke default
`src/hypvl/config/default.yaml` and the paper-scale `workflows/config/full.yaml` (the values they set).

Runs with PyYAML alone (no import of hypvl), so `mkdocs build` needs only the docs extra and PyYAML."""

from pathlib import Path

import yaml
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "src" / "hypvl" / "config" / "schema.yaml"
DEFAULT = ROOT / "src" / "hypvl" / "config" / "default.yaml"
FULL = ROOT / "workflows" / "config" / "full.yaml"
PAGE = "config-reference.md"
ANY = "*"  # the path segment of a mapping's own keys (an experiment id, a corpus, a job kind...)


def parameters(schema: dict) -> list[tuple[str, dict]]:
    """(dotted path, schema node) of every parameter: each named property, at any depth, through `oneOf`/`anyOf`
    alternatives and through a mapping's `additionalProperties` (its keys written `*`)."""
    found: list[tuple[str, dict]] = []

    def within(node, path: str) -> None:
        if not isinstance(node, dict):
            return
        for key, sub in (node.get("properties") or {}).items():
            child = f"{path}.{key}" if path else key
            found.append((child, sub))
            within(sub, child)
        for alternative in [*node.get("oneOf", []), *node.get("anyOf", [])]:
            within(alternative, path)
        if isinstance(node.get("additionalProperties"), dict):
            within(node["additionalProperties"], f"{path}.{ANY}")

    within(schema, "")
    return found


def type_of(node: dict, defs: dict) -> str:
    """A short reading of what a schema node admits: `integer 1..4096`, `one of: fp16, bf16, fp32`..."""
    if "$ref" in node:
        return type_of(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    if "enum" in node:
        return "one of " + ", ".join(_value(value) for value in node["enum"])
    if "const" in node:
        return _value(node["const"])
    for combined in ("oneOf", "anyOf"):
        if combined in node:
            return " or ".join(type_of(alternative, defs) for alternative in node[combined])
    kinds = node.get("type", "object" if "properties" in node else "any")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    words = []
    for kind in kinds:
        if kind == "array":
            items = node.get("items")
            words.append("list" + (f" of {type_of(items, defs)}" if isinstance(items, dict) else ""))
        elif kind == "object" and isinstance(node.get("additionalProperties"), dict) and "properties" not in node:
            words.append("mapping")
        elif kind in ("integer", "number"):
            low = node.get("minimum", node.get("exclusiveMinimum"))
            high = node.get("maximum", node.get("exclusiveMaximum"))
            bounds = f" {_value(low) if low is not None else ''}..{_value(high) if high is not None else ''}"
            words.append(kind + (bounds if low is not None or high is not None else ""))
        else:
            words.append(kind)
    return " or ".join(words)


def _value(value) -> str:
    """A value as it is written in a config (YAML flow style)."""
    if value is None:
        return "null"
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    return text[:-4].strip() if text.endswith("\n...") else text.removesuffix("...").strip()


def lookup(config: dict, path: str):
    """The value `config` sets at `path` ((False, None) where it sets none, or the path holds a `*`)."""
    node = config
    for key in path.split("."):
        if key == ANY or not isinstance(node, dict) or key not in node:
            return False, None
        node = node[key]
    return True, node


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _prose(text: str) -> str:
    """Schema text as literal markdown: outside its code spans, `<paper>` stays text (not an HTML tag) and `_`, `*`
    mark no emphasis."""
    parts = text.split("`")
    for index in range(0, len(parts), 2):  # the even parts lie outside code spans
        parts[index] = (parts[index].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                        .replace("_", "\\_").replace("*", "\\*"))
    return _cell("`".join(parts))


def _code(value_set: tuple) -> str:
    found, value = value_set
    if not found:
        return ""
    text = _value(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return "`" + _cell(text) + "`"


def page(schema_path: Path = SCHEMA, default_path: Path = DEFAULT, full_path: Path = FULL) -> str:
    """The config reference as markdown: a section per top-level key, a table row per parameter."""
    schema = yaml.safe_load(schema_path.read_text(encoding="utf-8"))
    default = yaml.safe_load(default_path.read_text(encoding="utf-8"))
    full = yaml.safe_load(full_path.read_text(encoding="utf-8"))
    defs = schema.get("$defs", {})
    lines = [
        "# Config reference",
        "",
        "Every parameter of the workflow config, generated from the schema every config is validated against "
        "(`src/hypvl/config/schema.yaml`) when this manual is built. *Smoke default* is what the packaged default "
        "(`src/hypvl/config/default.yaml`, the smoke scale) sets; *full.yaml* what paper scale "
        "(`workflows/config/full.yaml`) sets over it (empty: it keeps the default). `*` stands for a key of "
        "your choosing (an experiment, a corpus, a job kind). A key the schema does not list is an error naming "
        "the key. How to pass a config: [Scales and configuration](configuration.md).",
        "",
    ]
    header = ["| Parameter | Type | Smoke default | full.yaml | Description |", "|---|---|---|---|---|"]
    found = parameters(schema)
    nested = {path.split(".")[0] for path, _ in found if "." in path}
    sections: dict[str, list[str]] = {"Top-level settings": []}
    for path, node in found:
        top = path.split(".")[0]
        description = " ".join(str(node.get("description", "")).split())
        sections.setdefault(top if top in nested else "Top-level settings", []).append(
            f"| `{path}` | {_prose(type_of(node, defs))} | {_code(lookup(default, path))} | "
            f"{_code(lookup(full, path))} | {_prose(description)} |")
    for section, rows in sections.items():
        lines += ["", f"## {section}", "", *header, *rows]
    return "\n".join(lines) + "\n"


def on_files(files, config):
    """Add the generated config reference to the site's files (before the nav is built, so the nav may name it)."""
    existing = files.get_file_from_path(PAGE)
    if existing is not None:  # a stale copy written by hand would hide the generated page
        files.remove(existing)
    files.append(File.generated(config, PAGE, content=page()))
    return files


def on_page_content(html, page, config, files):
    """Mark the config reference's tables, which docs/css/extra.css lays out (narrow names and values, a wide
    description)."""
    if page.file.src_uri == PAGE:
        return html.replace("<table>", '<table class="config-reference">')
    return html
