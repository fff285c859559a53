"""Regression of the smoke-scale numbers: HyCoCLIP Table 1 from the default config, pinned.

Runs the real default config (the README's main job, about 7 minutes on 2 cores) into a temporary folder.
Runs on one machine are bitwise identical; across CPUs, floating-point differences move a few test images,
so each cell is pinned to +-6 points and each row's mean over the 16 sets to +-2 points: a real change
(a loss term, a prompt, a split) moves whole rows by more.
"""

import json

import pandas as pd
import pytest

from hypvl.data.synthetic.build import CLASSIFICATION_SETS

from test_workflow import snakemake


@pytest.fixture(scope="module")
def smoke_table(tmp_path_factory) -> pd.DataFrame:
    tmp = tmp_path_factory.mktemp("smoke")
    config = tmp / "paths.yaml"
    config.write_text(json.dumps({"data_dir": str(tmp / "data"), "results_dir": str(tmp / "results"),
                                  "reports_dir": str(tmp / "reports")}))
    run = snakemake(str(tmp / "reports" / "table1.md"), "--cores", "2", "--configfile", str(config))
    assert run.returncode == 0, run.stderr[-3000:]
    frame = pd.read_csv(tmp / "results" / "tables" / "hycoclip" / "table1.csv")
    return frame.pivot(index="row", columns="column", values="ours")


@pytest.mark.slow
def test_every_model_is_above_chance_on_every_set(smoke_table):
    for dataset, spec in CLASSIFICATION_SETS.items():
        chance = 100.0 / len(spec.classes)
        below = smoke_table[dataset][smoke_table[dataset] <= chance]
        assert below.empty, f"{dataset}: at or below chance ({chance:.1f}%): {below.to_dict()}"


@pytest.mark.slow
def test_smoke_numbers_are_pinned(smoke_table, dataframe_regression):
    dataframe_regression.check(smoke_table, basename="table1_cells", default_tolerance={"atol": 6.0})
    means = pd.DataFrame({"mean16": smoke_table.mean(axis=1)})
    dataframe_regression.check(means, basename="table1_row_means", default_tolerance={"atol": 2.0})
