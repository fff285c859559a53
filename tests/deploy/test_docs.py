"""The front door and the manual stay whole (issue 45): the manual (docs/, mkdocs.yml) builds with warnings as errors
(a broken link or anchor, a page left out of the nav, a nav entry without a page) and holds a page for every nav
entry; its config reference, generated as the site is built, lists every parameter of the config schema, each of
which has a description; the README stays a front door (at most 160 lines), its relative links lead to files (and
headings) that exist, and its test command is the one CI runs (.ci/run)."""

import html
import re
import subprocess
import sys

import pytest
import yaml

from helpers import REPO

README = REPO / "README.md"
MKDOCS = REPO / "mkdocs.yml"
DOCS = REPO / "docs"
SCHEMA = REPO / "src" / "hypvl" / "config" / "schema.yaml"
CI = REPO / ".ci" / "run"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
README_MAX_LINES = 160


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The manual built as CI builds it: `mkdocs build --strict` from the repository root, into a fresh folder."""
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(MKDOCS), "-d", str(out)],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stdout}\n{run.stderr}"
    return out


def nav_pages(nav) -> list[str]:
    """Every page (a docs-relative .md path) the nav of mkdocs.yml names, at any depth."""
    pages = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            pages += nav_pages(value)
        else:
            pages.append(value)
    return pages


def schema_parameters(node, path=""):
    """(path, schema node) of every named property of the config schema, through oneOf/anyOf alternatives and a
    mapping's additionalProperties (its keys written `*`)."""
    if not isinstance(node, dict):
        return
    for key, sub in (node.get("properties") or {}).items():
        child = f"{path}.{key}" if path else key
        yield child, sub
        yield from schema_parameters(sub, child)
    for alternative in [*node.get("oneOf", []), *node.get("anyOf", [])]:
        yield from schema_parameters(alternative, path)
    if isinstance(node.get("additionalProperties"), dict):
        yield from schema_parameters(node["additionalProperties"], f"{path}.*")


def slug(heading: str) -> str:
    """A heading's anchor as GitHub and MkDocs' toc both make it for the plain headings used here."""
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"\s+", "-", text)


def test_the_manual_builds_strict_with_a_page_for_every_nav_entry(site):
    config = yaml.safe_load(MKDOCS.read_text(encoding="utf-8"))
    assert config.get("strict") is True, "mkdocs.yml must build with warnings as errors (strict: true)"
    pages = nav_pages(config["nav"])
    assert len(pages) == len(set(pages)), f"a page is listed twice in the nav: {pages}"
    missing = [page for page in pages if not (site / page.replace(".md", ".html")).is_file()]
    assert not missing, f"nav entries without a built page: {missing}"
    written = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    assert written <= set(pages), f"pages of docs/ missing from the nav: {sorted(written - set(pages))}"
    assert "architecture.md" in pages and "config-reference.md" in pages


def test_the_config_reference_is_generated_not_committed():
    assert not (DOCS / "config-reference.md").exists(), (
        "docs/config-reference.md is generated from the schema as the site builds (docs/hooks.py); a committed copy "
        "would go stale")


def test_every_schema_parameter_has_a_description():
    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    parameters = list(schema_parameters(schema))
    assert len(parameters) > 100, "the walk of the schema found too few parameters"
    undescribed = [path for path, node in parameters
                   if not isinstance(node.get("description"), str) or not node["description"].strip()]
    assert not undescribed, f"schema parameters without a description: {undescribed}"


def test_the_config_reference_lists_every_schema_parameter(site):
    page = (site / "config-reference.html").read_text(encoding="utf-8")
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())  # what a reader sees
    text = re.sub(r"\s+([,.;:)])", r"\1", text)
    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    parameters = list(schema_parameters(schema))
    absent = [path for path, _ in parameters if f"<code>{html.escape(path)}</code>" not in page]
    assert not absent, f"parameters missing from the built config reference: {absent}"
    undescribed = [path for path, node in parameters
                   if re.sub(r"\s+([,.;:)])", r"\1", " ".join(node["description"].replace("`", " ").split()))
                   not in text]
    assert not undescribed, f"parameters whose description the built config reference does not show: {undescribed}"
    row = re.search(r"<code>train\.steps</code></td>(.*?)</tr>", page, re.S)
    assert row and "<code>200</code>" in row.group(1) and "<code>null</code>" in row.group(1), (
        "train.steps should show the smoke default (200) and full.yaml's null")


def test_the_readme_is_a_front_door():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; the front door keeps to {README_MAX_LINES}"


def test_every_relative_link_of_the_readme_exists():
    text = README.read_text(encoding="utf-8")
    links = LINK.findall(text)
    assert links, "the README links into the manual"
    broken = []
    for link in links:
        if re.match(r"[a-z][a-z0-9+.-]*:", link) or link.startswith("#"):
            continue  # a URL, or a heading of the README itself (checked below)
        target, _, anchor = link.partition("#")
        path = REPO / target
        if not path.exists():
            broken.append(f"{link}: no file {target}")
        elif anchor and path.suffix == ".md":
            headings = {slug(line.lstrip("#")) for line in path.read_text(encoding="utf-8").splitlines()
                        if line.startswith("#")}
            if anchor not in headings:
                broken.append(f"{link}: no heading #{anchor} in {target}")
    readme_headings = {slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}
    broken += [f"{link}: no heading" for link in links if link.startswith("#") and link[1:] not in readme_headings]
    assert not broken, f"broken links in README.md: {broken}"
    assert any(link.startswith("docs/") for link in links), "the README points into the manual"


def test_the_readme_test_command_is_what_ci_runs():
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    assert "bash .ci/run\n" in blocks, "the README gives `bash .ci/run` as a command of its own"
    assert re.search(r"`bash \.ci/run` is the test command", text), "the README says which command is the test command"
    script = CI.read_text(encoding="utf-8")
    assert "the README's test command" in script.splitlines()[1], ".ci/run says it is the README's test command"
    commands = [line for line in script.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert commands[-1].startswith("pytest"), ".ci/run ends by running the test suite"
