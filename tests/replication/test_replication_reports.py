"""Replication layer: the reports of compared tables (every number, missing cells, seeded rows, provenance) and the
CLI (compare, report, index)."""

import argparse
import json
import math
import re
import shutil
from pathlib import Path

import numpy
import pandas as pd
import pytest
from PIL import Image

from helpers import REPO
from helpers.replication_fixture import HASHES, OURS, PRINTED, RUN_CONFIG, stamp, write_metrics
from hypvl.errors import InputError
from hypvl.provenance import config_hash
from hypvl.replication.commands import add_commands
from hypvl.replication.compare import compare_table, read_compare_csv, write_compare_csv
from hypvl.replication.coverage import Blockers
from hypvl.replication.report import PILOT_BANNER, SMOKE_BANNER, write_report
from hypvl.spec.load import load_spec


# --- report -------------------------------------------------------------------------------------


def parse_section(markdown: str, heading: str) -> dict[str, list[str]]:
    """The markdown table under `## heading`: first label cell -> value cells (the last four columns)."""
    lines = markdown.split(f"## {heading}\n\n", 1)[1].splitlines()
    table = {}
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        table[cells[0].replace("\\", "")] = cells[-4:]
    return table


def strip_marks(text: str) -> str:
    """A rendered paper cell without bold/underline markup."""
    return text.replace("**", "").replace("<u>", "").replace("</u>", "")


@pytest.mark.parametrize("scale", ["smoke", "pilot", "full"])
def test_report_shows_every_paper_and_measured_number(workspace, scale):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    frame = compare_table(spec, "table1", write_metrics(workspace, scale), scale)
    out = workspace / "reports" / "tiny" / "table1.md"
    also = workspace / "reports" / "table1.md"
    write_report(spec, "table1", frame, out, also=[also])
    markdown = out.read_text()
    assert ("SMOKE SCALE" in markdown) == (scale == "smoke") and ("PILOT SCALE" in markdown) == (scale == "pilot")
    if scale == "smoke":
        assert SMOKE_BANNER in markdown
    elif scale == "pilot":
        assert PILOT_BANNER in markdown and "**Paper scale**" not in markdown
    else:
        assert "**Paper scale**" in markdown
    assert "±1 absolute" in markdown and "`tau` ±0.02" in markdown
    counts = frame["verdict"].value_counts()
    for verdict, count in counts.items():
        assert f"{count} {verdict.replace('_', ' ')}" in markdown
    assert all(hash_ in markdown for hash_ in HASHES.values()) and "c0ffee" in markdown
    assert "RegionCLIP is not trained by this suite" in markdown and "boxes as extra samples" in markdown

    labels = {"clip": "CLIP", "meru": "MERU*", "regionclip": "RegionCLIP"}
    columns = ["acc_a", "acc_b", "tau", "avg"]
    paper = parse_section(markdown, "Paper (as printed)")
    ours = parse_section(markdown, "Ours")
    delta = parse_section(markdown, "Difference (ours − paper) and verdict")
    assert paper["CLIP"][0] == "**50.0**" and paper["MERU*"][0] == "<u>31.2</u>"
    assert paper["RegionCLIP"][0] == "**<u>40.1</u>**"
    lines = frame.set_index(["row", "column"])
    for row, label in labels.items():
        for index, column in enumerate(columns):
            assert strip_marks(paper[label][index]) == PRINTED[(row, column)]
            line = lines.loc[(row, column)]
            if line.verdict == "external":
                assert ours[label][index] == "ext." and delta[label][index] == "ext."
                continue
            places = 3 if column == "tau" else 2  # one more decimal than the paper prints
            assert float(ours[label][index]) == pytest.approx(line.ours, abs=0.5 * 10 ** -places)
            assert len(ours[label][index].partition(".")[2]) == places
            if math.isnan(line.delta):
                assert delta[label][index] == "n/p"
            else:
                number, marker = delta[label][index].split(" ")
                assert float(number) == pytest.approx(line.delta, abs=0.5 * 10 ** -places)
                assert marker in {"within": "●", "outside": "▲▼◆", "not_comparable": "n/c"}[line.verdict]

    png = out.with_suffix(".png")
    assert "(table1.png)" in markdown and "(tiny/table1.png)" in also.read_text()
    page = out.with_suffix(".html").read_text()  # the HTML page of the same report, its plot embedded
    assert "<h1>tiny table1" in page and "data:image/png;base64," in page and "table1.png" not in page
    with Image.open(png) as image:
        image.verify()
        assert image.format == "PNG"
    with Image.open(png) as image:
        assert image.width > 400 and image.height > 200
        assert len(numpy.unique(numpy.asarray(image.convert("L")))) > 10  # something was drawn


def test_report_renders_before_anything_is_evaluated(workspace):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    frame = compare_table(spec, "table1", workspace / "no_metrics_yet", "smoke")
    assert frame["verdict"].value_counts().to_dict() == {"missing": 8, "external": 4}
    out = workspace / "reports" / "tiny" / "table1.md"
    write_report(spec, "table1", frame, out)
    ours = parse_section(out.read_text(), "Ours")
    assert ours["CLIP"] == ["? not run yet"] * 4 and ours["RegionCLIP"] == ["ext."] * 4
    with Image.open(out.with_suffix(".png")) as image:
        assert image.format == "PNG"


def test_a_missing_cell_shows_its_reason_in_the_report(workspace):
    """The plan's reasons (blockers) reach the cells of Ours and Difference and the summary the index copies."""
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    skip = {("tiny_clip", "hierarcaps"), *(("tiny_meru", task) for task in OURS["tiny_meru"])}
    metrics_dir = write_metrics(workspace, "smoke", skip=skip)
    blockers = Blockers({"tiny_meru": "needs weights from outside"}, {})
    frame = compare_table(spec, "table1", metrics_dir, "smoke", blockers=blockers)
    assert dict(zip(frame["row"] + "." + frame["column"], frame["reason"])) == {
        "clip.acc_a": "", "clip.acc_b": "", "clip.tau": "not run yet", "clip.avg": "",
        **{f"meru.{column}": "needs weights from outside" for column in ("acc_a", "acc_b", "tau", "avg")},
        **{f"regionclip.{column}": "" for column in ("acc_a", "acc_b", "tau", "avg")}}
    out = workspace / "reports" / "tiny" / "table1.md"
    write_report(spec, "table1", frame, out)
    markdown = out.read_text()
    ours, delta = parse_section(markdown, "Ours"), parse_section(markdown, "Difference (ours − paper) and verdict")
    assert ours["MERU*"] == delta["MERU*"] == ["? needs weights from outside"] * 4
    assert ours["CLIP"][2] == delta["CLIP"][2] == "? not run yet"
    assert "12 cells: 3 not comparable, 5 missing (1 not run yet, 4 needs weights from outside), 4 external." in markdown


def test_report_rejects_a_stale_compare_table(workspace):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    frame = compare_table(spec, "table1", write_metrics(workspace, "smoke"), "smoke")
    with pytest.raises(InputError, match="stale.csv: cells do not match"):
        write_report(spec, "table1", frame.iloc[1:], workspace / "r.md", source="stale.csv")


def test_cli_compare_report_index(workspace):
    metrics_dir = write_metrics(workspace, "smoke", skip={("tiny_meru", "zs_cifar10")})
    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers(required=True))
    spec = str(workspace / "replication" / "tiny.yaml")
    csv_path = workspace / "results" / "smoke" / "tables" / "tiny" / "table1.csv"
    reports = workspace / "reports"
    (reports / "claims.md").parent.mkdir(parents=True)
    (reports / "claims.md").write_text("# Claims\n")
    (reports / "coverage.md").write_text("# Coverage\n")
    for argv in (
        ["compare", "--spec", spec, "--table", "table1", "--metrics-dir", str(metrics_dir), "--scale", "smoke",
         "--out", str(csv_path), "--blockers", '{"tasks": {"zs_cifar10": "needs data the scale lacks"}}'],
        ["report", "--spec", spec, "--table", "table1", "--compare-csv", str(csv_path),
         "--out", str(reports / "tiny" / "table1.md")],
        ["index", "--reports-dir", str(reports), "--tables-dir", str(csv_path.parent.parent),
         "--out", str(reports / "index.md")],
        ["html", "--markdown", str(reports / "index.md"), "--out", str(reports / "index.html")],
    ):
        args = parser.parse_args(argv)
        args.func(args)
    verdicts = read_compare_csv(csv_path)["verdict"].value_counts().to_dict()
    assert verdicts == {"not_comparable": 5, "external": 4, "missing": 2, "no_paper_value": 1}
    index = (reports / "index.md").read_text()
    assert "(claims.md)" in index and "[Coverage](coverage.md)" in index
    assert "[tiny table1: Zero-shot classification and hierarchy](tiny/table1.md)" in index
    assert ("(smoke scale): 12 cells: 5 not comparable, 1 no paper value, 2 missing (2 needs data the scale lacks), "
            "4 external." in index)
    page = (reports / "index.html").read_text()  # the index's page leads to the reports' pages
    assert 'href="tiny/table1.html"' in page and 'href="claims.html"' in page and ".md\"" not in page
    agreement = next(line for line in index.splitlines() if line.startswith("| tiny"))  # the paper's counts
    assert [cell.strip() for cell in agreement.split("|")[1:-1]] == ["tiny", "0", "0", "0", "5", "2", "12"]
    assert "> **SMOKE SCALE: synthetic world, tiny models; numbers are not comparable to the paper**" in index
    args = parser.parse_args(["compare", "--spec", spec, "--table", "table7", "--metrics-dir", str(metrics_dir),
                              "--scale", "smoke", "--out", str(csv_path)])
    with pytest.raises(InputError, match=r"tiny\.yaml: no table 'table7'"):
        args.func(args)


# --- several seeds per row (config `seeds`) ------------------------------------------------------

CIFAR10_BY_SEED = {3: 51.0, 4: 49.0, 5: 53.4}  # tiny_clip's zs_cifar10 top1 per seed (3: declared)


def write_seed_variants(root: Path, scale: str, seeds=(4, 5)) -> Path:
    """OURS as metric JSONs, plus tiny_clip's seed variants (`tiny_clip__seed<N>`): the same numbers but
    zs_cifar10, which takes CIFAR10_BY_SEED."""
    metrics_dir = write_metrics(root, scale)
    for seed in seeds:
        for task in OURS["tiny_clip"]:
            record = json.loads((metrics_dir / "tiny_clip" / f"{task}.json").read_text())
            record["experiment"] = f"tiny_clip__seed{seed}"
            if task == "zs_cifar10":
                record["metrics"] = {"top1": CIFAR10_BY_SEED[seed]}
            path = metrics_dir / record["experiment"] / f"{task}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record))
    return metrics_dir


def test_a_row_with_several_seeds_is_their_mean_with_their_spread(workspace):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    metrics_dir = write_seed_variants(workspace, "full")
    frame = compare_table(spec, "table1", metrics_dir, "full", seeds={"tiny_clip": [3, 4, 5]}).set_index(["row", "column"])
    values = numpy.array(list(CIFAR10_BY_SEED.values()))
    acc_a = frame.loc[("clip", "acc_a")]
    assert acc_a["ours"] == pytest.approx(values.mean()) and acc_a["n_seeds"] == 3
    assert acc_a["spread"] == pytest.approx(values.std(ddof=1))  # sample standard deviation, numpy as the oracle
    # 51.13 - 50.0 is outside the tolerance 1.0, but within 2 standard deviations (2 x 2.20) of the seeds
    assert acc_a["verdict"] == "within_seed_spread"
    acc_b = frame.loc[("clip", "acc_b")]  # every seed measured 29.49: no spread, so -1.01 stays outside
    assert acc_b["spread"] == 0 and acc_b["verdict"] == "outside"
    assert frame.loc[("clip", "avg"), "ours"] == pytest.approx(((values + 29.49) / 2).mean())
    assert frame.loc[("meru", "acc_a"), "n_seeds"] == 1 and math.isnan(frame.loc[("meru", "acc_a"), "spread"])
    only_others = compare_table(spec, "table1", metrics_dir, "full", seeds={"tiny_clip": [4, 5]})
    assert only_others.loc[0, "ours"] == pytest.approx((49.0 + 53.4) / 2)  # the declared seed 3 is not among them
    smoke = compare_table(spec, "table1", write_seed_variants(workspace, "smoke"), "smoke", seeds={"tiny_clip": [3, 4, 5]})
    assert smoke.loc[0, "verdict"] == "not_comparable"  # a smoke number never gets a tolerance verdict


def test_a_seeded_row_lacking_one_seed_is_missing_and_seeds_must_name_rows(workspace):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    metrics_dir = write_seed_variants(workspace, "full", seeds=(4,))
    frame = compare_table(spec, "table1", metrics_dir, "full", seeds={"tiny_clip": [3, 4, 5]}).set_index(["row", "column"])
    assert (frame.loc["clip", "verdict"] == "missing").all()
    with pytest.raises(InputError, match=r"--seeds: 'tiny_other' is not the experiment of a row of .*tiny\.yaml"):
        compare_table(spec, "table1", metrics_dir, "full", seeds={"tiny_other": [3, 4]})


def test_the_report_shows_mean_and_spread_of_a_seeded_row(workspace):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    frame = compare_table(spec, "table1", write_seed_variants(workspace, "full"), "full", seeds={"tiny_clip": [3, 4, 5]})
    path = workspace / "table1.csv"
    write_compare_csv(frame, path)
    pd.testing.assert_frame_equal(read_compare_csv(path), frame)  # n_seeds and spread survive the CSV
    out = workspace / "reports" / "tiny" / "table1.md"
    write_report(spec, "table1", read_compare_csv(path), out)
    markdown = out.read_text()
    values = numpy.array(list(CIFAR10_BY_SEED.values()))
    ours = parse_section(markdown, "Ours")
    assert ours["CLIP"][0] == f"{values.mean():.2f} ± {values.std(ddof=1):.2f}"  # the paper prints one decimal
    assert ours["MERU*"][0] == "32.20"
    assert "over the seeds of the rows trained with several (config `seeds`): `clip` (3 seeds)." in markdown
    assert parse_section(markdown, "Difference (ours − paper) and verdict")["CLIP"][0] == "+1.13 ◐"
    metrics_dir = write_seed_variants(workspace, "full")
    shutil.rmtree(metrics_dir / "tiny_meru")  # the only other row with numbers
    write_report(spec, "table1", compare_table(spec, "table1", metrics_dir, "full", seeds={"tiny_clip": [3, 4, 5]}), out)
    assert "Mean ± standard deviation over 3 seeds in every measured row (config `seeds`)." in out.read_text()


def test_regression_leaves_seed_variants_unpinned(workspace):
    from hypvl.replication.regression import load_policy, measured_values

    metrics_dir = write_seed_variants(workspace, "smoke")
    measured = measured_values(metrics_dir, "smoke", load_policy(REPO / "baselines" / "tolerances.yaml"))
    assert set(measured["experiment"]) == {"tiny_clip", "tiny_meru"}


def test_the_report_carries_the_provenance_of_its_numbers(workspace):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    metrics_dir = write_metrics(workspace, "full")
    stamp(metrics_dir, run_config=RUN_CONFIG, run_config_hash=config_hash(RUN_CONFIG), git_dirty=False,
          packages={"torch": "9.9", "numpy": "1.0"}, data_manifest_hash="d" * 64)
    for experiment, digest in (("tiny_clip", "1" * 64), ("tiny_meru", "2" * 64)):
        for path in (metrics_dir / experiment).glob("*.json"):
            record = json.loads(path.read_text())
            record["provenance"]["checkpoint_sha256"] = digest
            path.write_text(json.dumps(record))
    out = workspace / "table1.md"
    write_report(spec, "table1", compare_table(spec, "table1", metrics_dir, "full"), out)
    section = out.read_text().split("## Provenance", 1)[1]
    assert f"`{config_hash(RUN_CONFIG)}`" in section
    assert "`c0ffee`; uncommitted changes: no" in section
    assert "packages: numpy=1.0 torch=9.9" in section
    assert f"data manifest (sha256): `{'d' * 12}`" in section
    assert f"checkpoints (sha256): clip `{'1' * 12}`; meru `{'2' * 12}`" in section
