"""Regression of the smoke-scale numbers against the pinned baseline `baselines/smoke.csv`.

Runs the real default config into a temporary folder: the README's main job (HyCoCLIP Table 1, 13
trained models, and the stand-ins of the six released checkpoints beside their rows) plus HyCoCLIP's
other tasks on its three ViT-S GRIT models (Table 2's retrieval and hierarchical-classification rows,
detection, scene understanding, HierarCaps; their released checkpoints' stand-ins too) and the config's
`regression_extras` (the linear-probe, lexical and radius groups on the same models), so every task
group runs. Every number it writes must sit within `baselines/tolerances.yaml` of its pinned value;
the whole baseline (every experiment every table needs) is checked by
`snakemake --cores all reports/regression.md`. The flagship report's layout, a second call
finding nothing to do and the HTML report of the flagship (`snakemake --report`) are checked on the same run.
"""

import base64
import json
import re
import subprocess
import sys

import pandas as pd
import pytest

from helpers import REPO
from helpers.workflow import snakemake
from hypvl.worlds.smoke.build import CLASSIFICATION_SETS
from hypvl.spec.expected import load_expected
from hypvl.replication.regression import check, failures, load_policy, measured_values, read_baseline
from hypvl.tasks import GROUP_MODULES, zero_shot_datasets

def outside(experiment: str) -> bool:
    """True for a stand-in of weights from outside (their numbers repeat their rows' models', checked below)."""
    return "_released_" in experiment


@pytest.mark.slow
def test_flagship_report_prints_the_paper_and_13_by_16_measured_numbers(smoke_run):
    report = (smoke_run.parent / "reports" / "table1.md").read_text()
    assert "SMOKE SCALE" in report
    expected = load_expected(REPO / "expected" / "hycoclip" / "table1.csv")
    paper_section = report.split("## Paper (as printed)")[1].split("## Ours")[0]  # the full copies, collapsed
    ours_section = report.split("## Ours\n")[1].split("## Difference")[0]
    compact = report.split("## Ours beside the paper")[1].split("<details>")[0]
    assert sum(line.startswith("| RedCaps") or line.startswith("| GRIT") for line in compact.splitlines()) == 13 + 6
    for row in expected.rows:
        for col in expected.columns:
            assert expected.cells[(row, col)].printed in paper_section
    ours_rows = [line for line in ours_section.splitlines() if line.startswith(("| RedCaps", "| GRIT"))]
    assert len(ours_rows) == 13 + 6  # and the six released checkpoints' stand-ins, marked
    assert sum("(released, stand-in)" in line for line in ours_rows) == 6
    assert all(len(re.findall(r"-?\d+\.\d+", line.split("|", 6)[-1])) == 16 for line in ours_rows)
    metrics = sorted((smoke_run / "metrics").glob("*/zs_*.json"))
    assert len(metrics) == (13 + 6) * len(zero_shot_datasets("smoke"))  # one evaluation job covers every set


@pytest.mark.slow
def test_editing_the_run_settings_reruns_nothing_and_another_train_setting_retrains(smoke_run):
    """Checkpoints, the decoded cache and telemetry change no number: after the run, editing them leaves Table 1
    current (a dry run finds nothing to do); editing another train setting retrains its models."""
    folder = smoke_run.parent
    table = str(folder / "reports" / "table1.md")
    settings = folder / "run_settings.yaml"
    settings.write_text(json.dumps({"train": {"checkpoint_every": 3, "cache_decoded": False, "telemetry": {
        "log_every": 7, "tensorboard": False, "wandb": {"project": "p", "mode": "offline"}}}}))
    edited = snakemake(table, "-n", "--configfile", str(folder / "paths.yaml"), str(settings))
    assert edited.returncode == 0 and "Nothing to be done" in edited.stdout + edited.stderr
    settings.write_text(json.dumps({"train": {"shuffle_buffer": 7}}))
    other = snakemake(table, "-n", "--configfile", str(folder / "paths.yaml"), str(settings))
    assert other.returncode == 0 and re.search(r"^train\s+13$", other.stdout, re.M), other.stdout[-3000:]


@pytest.mark.slow
def test_the_html_report_holds_the_flagship_table_and_its_plot_under_hycoclip(smoke_run):
    """`snakemake --report report.html reports/table1.md`: the page and the picture of Table 1 under the HyCoCLIP
    category (the report embeds its data as JSON: `var categories` and `var results`, each file a data URI), the
    training curves of its rows' models, and the workflow's description."""
    out = smoke_run.parent / "report.html"
    run = snakemake(str(smoke_run.parent / "reports" / "table1.md"), "--cores", "2", "--configfile",
                    str(smoke_run.parent / "paths.yaml"), "--report", str(out))
    assert run.returncode == 0, run.stderr[-3000:]
    text = out.read_text()

    def embedded(name):
        return json.loads(re.search(rf"^\s*var {name} = (\{{.*\}});\s*$", text, re.M).group(1))

    categories, results = embedded("categories"), embedded("results")
    table1 = [str(smoke_run.parent / "reports" / f"table1.{suffix}") for suffix in ("html", "png")]
    assert categories["HyCoCLIP"]["Table 1"] == table1
    assert len(categories["Training curves"]["Other"]) == 13  # the 13 trained rows' models
    page = results[table1[0]]["data_uri"].partition("base64,")[2]
    page = base64.b64decode(page).decode()
    assert "<h2>Ours beside the paper</h2>" in page and "data:image/png;base64," in page
    assert "<summary>Paper (as printed)</summary>" in page and "SMOKE SCALE" in page
    assert results[table1[1]]["mime_type"] == "image/png"
    assert "hypvl replicates five hyperbolic vision-language papers" in text


@pytest.mark.slow
def test_a_released_stand_in_repeats_its_rows_model_bitwise(smoke_run):
    """A released checkpoint's stand-in is its row's model in the reference layout: every number the same."""
    frame = pd.read_csv(smoke_run / "tables" / "hycoclip" / "table1.csv")
    released = frame[frame["row"].str.endswith("__released")].set_index(["row", "column"])["ours"]
    rows = frame.set_index(["row", "column"])["ours"]
    assert len(released) == 6 * 16
    for (row, column), value in released.items():
        assert value == rows[(row.removesuffix("__released"), column)]


@pytest.mark.slow
def test_every_model_learns_and_every_set_is_learned(smoke_run):
    """Each model's mean over Table 1's 16 sets is above chance's mean by more than 4 standard deviations of a
    guessing model's mean (binomial, from each set's test size); each set's mean over the models is above its
    chance. One 200-step model may still sit at chance on one small set."""
    frame = pd.read_csv(smoke_run / "tables" / "hycoclip" / "table1.csv")
    table = frame.pivot(index="row", columns="column", values="ours")
    chance = pd.Series({dataset: 100.0 / len(spec.classes) for dataset, spec in CLASSIFICATION_SETS.items()})
    sizes = pd.Series({dataset: json.loads((smoke_run / "metrics" / "hyco_clip_vits_grit" / f"zs_{dataset}.json")
                                           .read_text())["n_samples"] for dataset in chance.index})
    guessing_sd = (chance * (100 - chance) / sizes).sum() ** 0.5 / len(chance)  # sd of a guessing model's mean
    above = table[chance.index] - chance
    weak = above.mean(axis=1)[above.mean(axis=1) <= 4 * guessing_sd]
    assert weak.empty, f"models within 4 sd ({4 * guessing_sd:.1f} points) of chance on average: {weak.to_dict()}"
    unlearned = above.mean(axis=0)[above.mean(axis=0) <= 0]
    assert unlearned.empty, f"sets no better than chance over the models: {unlearned.to_dict()}"


@pytest.mark.slow
def test_every_task_group_ran_and_every_number_matches_its_pin(smoke_run):
    policy = load_policy(REPO / "baselines" / "tolerances.yaml")
    measured = measured_values(smoke_run / "metrics", "smoke", policy)
    assert set(measured["group"]) == set(GROUP_MODULES)
    # the stand-ins repeat their rows' numbers (above) and are pinned at the next full re-pin
    measured = measured[~measured["experiment"].map(outside)]
    checked = check(measured, read_baseline(REPO / "baselines" / "smoke.csv"), policy, "smoke", whole=False)
    bad = failures(checked)
    assert bad.empty, bad.to_string()
    assert measured["experiment"].nunique() == 13  # HyCoCLIP Table 1's models


@pytest.mark.slow
def test_regress_command_passes_on_the_run(smoke_run, tmp_path):
    out = tmp_path / "regression.md"
    run = subprocess.run([sys.executable, "-m", "hypvl.cli", "regress", "--metrics-dir", str(smoke_run / "metrics"),
                          "--scale", "smoke", "--baseline", str(REPO / "baselines" / "smoke.csv"),
                          "--tolerances", str(REPO / "baselines" / "tolerances.yaml"), "--strict", "--out", str(out)],
                         cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert out.read_text().startswith("# Regression at scale `smoke`: PASS")
