"""The bad-input corpus, round three (issue 44), the results and reports cases: an outside model's metrics given an
experiment of the papers, numbers too large to be read, markup in a spec's name or a config's paths, a model folder
bringing code of its own. Each is refused as tests/trust/test_bad_inputs_malformed.py's are (the real `hypvl` command
run in-process: a non-zero exit, exactly one line on stderr naming the file and the problem, no traceback, no output
file). What the pages do with hostile text that is no refusal is asserted in a browser
(tests/trust/test_trust_reports.py).

Each case builds its input under `tmp_path` and returns (argv, the file the line must name, a regular expression for
the problem, the outputs that must not exist).
"""

import json

import pytest

from helpers.bad_input_builders import (
    compare,
    expected_case,
    metrics_case,
    metrics_record_case,
    refused_in_one_line,
    spec_case,
    write,
)
from hypvl.cli import main

HUGE = "1" + "0" * 400  # a 401-digit number: float() of it is inf, json and YAML read it as an exact integer
SCRIPT = "</script><script>document.title='pwned'</script>"


def outside_model(experiment: str | None, folder: str | None):
    """`hypvl evaluate zeroshot --source open_clip:<folder>` given a paper's experiment (`--experiment`) or writing
    into its metrics folder (`--out-dir .../metrics/<folder>`); the model's folder need not load: refused first."""
    def build(tmp_path):
        (tmp_path / "open_clip").mkdir()
        out = tmp_path / "results" / "smoke" / "metrics" / (folder or "extra_model")
        argv = ["evaluate", "zeroshot", "--source", f"open_clip:{tmp_path / 'open_clip'}", "--geometry", "euclidean",
                "--out-dir", str(out), "--tasks", "zs_cifar10", *(["--experiment", experiment] if experiment else [])]
        named = f"--experiment {experiment}" if experiment else f"--out-dir {out}"
        problem = "never as another experiment" if experiment else "metrics folder of 'hyco_clip_vits_grit'"
        return argv, named, problem, [out / "zs_cifar10.json"]
    return build


def report_of(edit, problem):
    """`hypvl report` of the fixture's compare CSV, `edit(text)` applied to it first."""
    def build(tmp_path):
        argv, (csv,) = compare(tmp_path)
        assert main(argv) == 0
        csv.write_text(edit(csv.read_text()))
        out = tmp_path / "table1.md"
        argv = ["report", "--spec", str(tmp_path / "replication" / "tiny.yaml"), "--table", "table1",
                "--compare-csv", str(csv), "--out", str(out)]
        return argv, csv, problem, [out, out.with_suffix(".html")]
    return build


def first_number(text: str) -> str:
    """A compare CSV with its first `ours` number 400 digits long."""
    lines = text.splitlines()
    columns = lines[0].split(",")
    at = columns.index("ours")
    cells = lines[1].split(",")
    cells[at] = HUGE
    return "\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n"


def custom_code_folder(tmp_path):
    """`hypvl evaluate --source transformers:<folder>` of a save_pretrained folder whose config maps AutoModel to a
    module of its own (`modeling_mine.py`), which would leave a file behind if it ran."""
    from helpers.library import transformers_folder

    *_, folder = transformers_folder(tmp_path, "clip")
    ran = tmp_path / "the folder's code ran"
    (folder / "modeling_mine.py").write_text(f"open({str(ran)!r}, 'w').close()\n")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "auto_map": {"AutoModel": "modeling_mine.MineModel"}}))
    out = tmp_path / "metrics"
    argv = ["evaluate", "zeroshot", "--source", f"transformers:{folder}", "--geometry", "euclidean", "--out-dir",
            str(out), "--tasks", "zs_cifar10"]
    return argv, folder, r"holds code of its own \(modeling_mine\.py, config\.json \(auto_map\)\); .* refused", \
        [ran, out / "zs_cifar10.json"]


def baseline_of_400_digits(tmp_path):
    """`hypvl regress` of the fixture's metric JSONs against a baseline pinning tiny_clip's top-1 at 10^400."""
    _, (out,) = compare(tmp_path)
    baseline = write(tmp_path / "smoke.csv", f"experiment,task,metric,value\ntiny_clip,zs_cifar10,top1,{HUGE}\n")
    report = tmp_path / "regression.md"
    argv = ["regress", "--metrics-dir", str(tmp_path / "results" / "smoke" / "metrics"), "--scale", "smoke",
            "--baseline", str(baseline), "--tolerances", "baselines/tolerances.yaml", "--out", str(report)]
    return argv, baseline, r"needs exactly one numeric value, finite and within ±1e\+15", [report]


def config_with_markup(tmp_path):
    """`hypvl coverage` (the workflow's plan) of a config whose reports folder holds `</script><script>`."""
    config = write(tmp_path / "config.yaml", f"reports_dir: \"{tmp_path}/r{SCRIPT}\"\n")
    out = tmp_path / "coverage.md"
    return ["coverage", "--configfile", str(config), "--out", str(out)], "reports_dir", \
        "holds '<', which snakemake --report would write unescaped", [out]


CASES = {
    # an outside model's metrics in a paper's row
    "evaluate_outside_model_as_a_paper_experiment": outside_model("hyco_clip_vits_grit", None),
    "evaluate_outside_model_into_a_paper_rows_folder": outside_model(None, "hyco_clip_vits_grit"),
    "metrics_of_an_outside_model": metrics_record_case(
        lambda r: r["provenance"].update(model={"experiment": "extra_mine", "source": "open_clip:/models/mine",
                                                "library": "open_clip"}),
        r"measured on an outside model \('extra_mine', source 'open_clip:/models/mine'\), not on a model trained "
        r"for 'tiny_clip'"),
    # numbers no float holds
    "expected_cell_of_400_digits": expected_case(lambda text: text.replace("30.5", HUGE),
                                                 r"column 'acc_b': '1000.*is not a finite number \(as a float: inf\)"),
    "metrics_value_of_400_digits": metrics_case(lambda text: text.replace("51.0", HUGE),
                                                r"metric 'top1' is an integer of about 401 digits, beyond ±1e\+15"),
    "metrics_value_of_5000_digits": metrics_case(lambda text: text.replace("51.0", "1" * 5000), "not valid JSON"),
    "metrics_sample_count_nan": metrics_record_case(lambda r: r.update(n_samples=float("nan")),
                                                    "n_samples is nan, not a finite number"),
    "spec_number_of_400_digits": spec_case(lambda d: d["experiments"]["tiny_clip"]["overrides"].update(
        steps=int(HUGE)), r"experiments\.tiny_clip\.overrides\.steps: not a finite number within ±1e\+15"),
    "compare_csv_number_of_400_digits": report_of(first_number, r":2: ours is .1000.*, not a finite number within"),
    "baseline_value_of_400_digits": baseline_of_400_digits,
    "config_lr_of_400_digits": lambda tmp_path: (
        ["coverage", "--configfile", str(write(tmp_path / "config.yaml", f"train: {{lr: {HUGE}}}\n")), "--out",
         str(tmp_path / "coverage.md")], tmp_path / "config.yaml",
        r"config key train\.lr: not a finite number within ±1e\+15", [tmp_path / "coverage.md"]),
    # markup where a page shows it unescaped
    "spec_name_with_a_script": spec_case(lambda d: d.update(name=f"Tiny{SCRIPT}"), r"name: .* does not match"),
    "spec_name_with_a_line_break": spec_case(lambda d: d.update(name="Tiny\n\n.. raw:: html"),
                                             r"name: .* does not match"),
    "config_path_with_a_script": config_with_markup,
    # code a model folder brings
    "transformers_folder_with_custom_code": custom_code_folder,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_refused_in_one_line(name, tmp_path, capsys, monkeypatch):
    refused_in_one_line(CASES[name], tmp_path, capsys, monkeypatch)
