"""Reports under attack (issue 44): the HTML pages the suite writes (a table's, the index) and the `snakemake --report`
page built on its captions and categories, from metric JSONs, a spec and a printed table holding markup, read by
headless Chromium. No injected script runs (it would retitle the page and add an element), the hostile text shows
escaped, and a page embeds no file but the picture its step wrote; a workflow never starts on a file dated in the
future. The refusals in one line (a spec's name, a config's path holding markup) are in
tests/trust/test_bad_inputs_results.py."""

import base64
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import REPO
from helpers.browser import browse, needs_chromium
from helpers.replication_fixture import FIXTURE, OURS, edit_spec, write_metrics
from hypvl.cli import main
from hypvl.errors import InputError
from hypvl.replication.html import to_html
from hypvl.spec.load import load_spec

PWNED = "document.title='pwned';document.body.appendChild(document.createElement('hr')).id='pwned'"
SCRIPT = f"<script>{PWNED}</script>"
IMAGE = f"<img src=x onerror=\"{PWNED}\">"


def assert_no_script_ran(dom: str, page: Path) -> None:
    assert dom.strip(), f"{page}: Chromium read no DOM"
    assert "<title>pwned</title>" not in dom and 'id="pwned"' not in dom, f"{page}: an injected script ran"


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    """The replication fixture whose metric JSONs, spec and printed labels hold markup and a local image's path, its
    table report and index rendered: (tmp_path, the secret image's bytes)."""
    monkeypatch.chdir(REPO)
    shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
    metrics = write_metrics(tmp_path, "smoke")
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG\r\n\x1a\n a local file no page may embed")
    for experiment, tasks in OURS.items():
        for task in tasks:
            path = metrics / experiment / f"{task}.json"
            record = json.loads(path.read_text())
            record["provenance"].update(packages=f"torch 2.5 {SCRIPT} ![x]({secret}) {IMAGE}",
                                        git_commit=f"`{SCRIPT}`", config_hash=f"``a|b`{IMAGE}")
            path.write_text(json.dumps(record))
    edit_spec(tmp_path, lambda d: (d.update(title=f"Tiny {SCRIPT}"),
                                   d["experiments"]["tiny_clip"].update(note=IMAGE)))
    expected = tmp_path / "expected" / "tiny" / "table1.csv"
    expected.write_text(expected.read_text().replace("CLIP,", f"CLIP {SCRIPT},", 1))
    csv, report = tmp_path / "results" / "smoke" / "tables" / "tiny" / "table1.csv", tmp_path / "reports" / "tiny"
    assert main(["compare", "--spec", str(tmp_path / "replication" / "tiny.yaml"), "--table", "table1",
                 "--metrics-dir", str(metrics), "--scale", "smoke", "--out", str(csv)]) == 0
    assert main(["report", "--spec", str(tmp_path / "replication" / "tiny.yaml"), "--table", "table1",
                 "--compare-csv", str(csv), "--out", str(report / "table1.md")]) == 0
    assert main(["index", "--reports-dir", str(tmp_path / "reports"), "--tables-dir", str(csv.parent.parent),
                 "--out", str(tmp_path / "reports" / "index.md")]) == 0
    assert main(["html", "--markdown", str(tmp_path / "reports" / "index.md"), "--out",
                 str(tmp_path / "reports" / "index.html")]) == 0
    return tmp_path, secret.read_bytes()


@needs_chromium
def test_the_table_and_index_pages_run_no_injected_script(hostile):
    """A table's page and the index, from metric JSONs whose packages, commit and config hash and a spec and printed
    table whose title, note and label hold `<script>` and `<img onerror>`: Chromium runs none of it, shows it as
    text, and the page embeds no local file a metric JSON names."""
    tmp_path, secret = hostile
    pages = [tmp_path / "reports" / "tiny" / "table1.html", tmp_path / "reports" / "index.html"]
    doms = browse(pages, tmp_path / "chromium")
    for page, dom in doms.items():
        assert_no_script_ran(dom, page)
    table = doms[pages[0]]
    assert table.count("&lt;script&gt;document.title='pwned'") >= 4  # title, label, packages, commit
    assert "&lt;img src=x onerror=" in table and "torch 2.5" in table
    source = pages[0].read_text()
    assert base64.b64encode(secret).decode()[:40] not in source and "data:image/png;base64," in source


def test_a_page_embeds_only_the_pictures_its_step_wrote(tmp_path):
    """An image a report's markdown links (a path from a metric JSON, absolute or relative) is refused unless the step
    names it as one it wrote; raw `<img>` and `<script>` are shown as text; the suite's own tags pass."""
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG\r\n\x1a\n")
    for link in (str(secret), "secret.png"):
        with pytest.raises(InputError, match=r"which is no image this step wrote; not embedded"):
            to_html(f"# t\n\n![x]({link})\n", tmp_path)
    markdown = "\n\n".join(["# t", "![x](secret.png)", '<img src="secret.png">', SCRIPT,
                             "| a |\n|---|\n| 1<br><sub>2</sub> |"])
    page = to_html(markdown, tmp_path, images=[secret])
    assert page.count("data:image/png;base64,") == 1 and "&lt;img src=&quot;secret.png&quot;&gt;" in page
    assert "<script>" not in page.split("</head>")[1] and "1<br><sub>2</sub>" in page


@needs_chromium
def test_the_snakemake_report_page_runs_no_script(hostile):
    """`snakemake --report` of the suite's captions (workflows/report), the spec's name as a category and the hostile
    table page: a name holding `</script>` never gets there (Snakemake writes categories unescaped into a script),
    and with the most markup-like name the spec schema lets through, Chromium runs no injected script."""
    tmp_path, _ = hostile
    spec = edit_spec(tmp_path, lambda d: d.update(name=f"Tiny</script>{SCRIPT}"))
    with pytest.raises(InputError, match="name: .* does not match"):
        load_spec(spec)
    name = "Tiny (1.0/2+3-x), y"
    edit_spec(tmp_path, lambda d: d.update(name=name))
    captions = REPO / "workflows" / "report"
    (tmp_path / "Snakefile").write_text(f"""
from hypvl.spec.load import load_spec
config["scale"] = "smoke"
report: {str(captions / 'workflow.rst')!r}
NAME = load_spec({str(tmp_path / 'replication' / 'tiny.yaml')!r}).name
rule all:
    input: "reports/tiny/table1.html", "reports/tiny/table1.png"
rule report:
    output:
        html=report("reports/{{paper}}/{{table}}.html", caption={str(captions / 'table.rst')!r}, category=NAME,
                    subcategory="Table 1"),
        png=report("reports/{{paper}}/{{table}}.png", caption={str(captions / 'plot.rst')!r}, category=NAME),
    shell: "false"  # made by the fixture
""")
    out = tmp_path / "report.html"
    run = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "--cores", "1", "--report", str(out)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f'"{name}"' in out.read_text()
    assert_no_script_ran(browse([out], tmp_path / "chromium")[out], out)


def test_a_workflow_never_starts_on_a_file_dated_in_the_future(tmp_path):
    """A table CSV dated in the future (a clock set wrong): the workflow, dry run included, stops before any job and
    names it (redated to now, it would look newer than a metric edited after it, and keep its stale number)."""
    csv = tmp_path / "results" / "tables" / "hycoclip" / "table1.csv"
    csv.parent.mkdir(parents=True)
    csv.write_text("row,column\n")
    future = time.time() + 3e8
    os.utime(csv, (future, future))
    paths = tmp_path / "paths.yaml"
    paths.write_text(json.dumps({"data_dir": str(tmp_path / "data"), "results_dir": str(tmp_path / "results"),
                                 "reports_dir": str(tmp_path / "reports")}))
    run = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "-n", str(tmp_path / "reports" /
                          "table1.md"), "--configfile", str(paths)], cwd=REPO, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode != 0
    assert f"{csv}: dated in the future" in run.stdout + run.stderr
    assert csv.stat().st_mtime == pytest.approx(future)  # left as it was: the user decides
