"""The `hypvl` command line: several commands in one process (`::`), the first failure stopping the rest."""

import pytest

from hypvl.cli import main, split_commands


def test_commands_split_at_the_separator():
    assert split_commands(["train", "--x", "1", "::", "evaluate", "zeroshot"]) == [["train", "--x", "1"],
                                                                                   ["evaluate", "zeroshot"]]
    assert split_commands(["index"]) == [["index"]]


def _index(tmp_path, name: str) -> list[str]:
    return ["index", "--reports-dir", str(tmp_path / "reports"), "--out", str(tmp_path / name)]


def test_chained_commands_all_run(tmp_path):
    (tmp_path / "reports").mkdir()
    assert main([*_index(tmp_path, "a.md"), "::", *_index(tmp_path, "b.md")]) == 0
    assert (tmp_path / "a.md").is_file() and (tmp_path / "b.md").is_file()


def test_a_failing_command_stops_the_chain_with_one_line(tmp_path, capsys):
    (tmp_path / "reports").mkdir()
    compare = ["compare", "--spec", str(tmp_path / "missing.yaml"), "--table", "table1", "--metrics-dir",
               str(tmp_path), "--scale", "smoke", "--out", str(tmp_path / "t.csv")]
    assert main([*compare, "::", *_index(tmp_path, "after.md")]) == 1
    assert not (tmp_path / "after.md").exists()
    assert capsys.readouterr().err.strip().splitlines() == [f"hypvl compare: {tmp_path / 'missing.yaml'}: "
                                                            "replication spec not found"]


def test_a_usage_error_anywhere_runs_nothing(tmp_path):
    (tmp_path / "reports").mkdir()
    with pytest.raises(SystemExit):
        main([*_index(tmp_path, "first.md"), "::", "index", "--no-such-option"])
    assert not (tmp_path / "first.md").exists()


@pytest.mark.parametrize("argv", [
    ["train", "--spec", "s.yaml", "--experiment", "e", "--out", "o", "--threads", "0"],
    ["evaluate", "zeroshot", "--experiment", "e", "--checkpoint", "c.pt", "--out-dir", "o", "--threads", "0"],
    ["ground", "--shard-size", "0"],
], ids=["train", "evaluate", "ground"])
def test_a_count_below_one_is_a_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(": must be at least 1, got 0")


def test_version_is_the_installed_distributions(capsys):
    """`hypvl --version` prints pyproject.toml's version (the installed distribution's), as CITATION.cff cites it."""
    import re
    import tomllib

    import yaml

    from helpers import REPO

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"hypvl {declared}"
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert citation["version"] == declared and citation["license"] == "MIT"
    assert (REPO / "LICENSE").read_text().startswith("MIT License")
    def words(title: str) -> str:
        return " ".join(re.findall(r"[a-z]+", title.split(" (")[0].lower()))

    cited = {words(ref["title"]) for ref in citation["references"]}
    specs = {words(yaml.safe_load(path.read_text())["title"]) for path in (REPO / "replication").glob("*.yaml")}
    assert cited == specs and len(cited) == 5  # the five papers the suite replicates, each cited


def test_evaluate_help_names_each_groups_tasks(capsys):
    """`hypvl evaluate --help` says what each group computes, and a group's own help lists every task it writes."""
    from hypvl.tasks import declared_tasks

    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    listing = " ".join(capsys.readouterr().out.split())
    assert "scene tasks vg_attribution, vlc_attribute, vlc_object, vlc_relation" in listing
    assert "zeroshot tasks zs_aircraft, zs_caltech101, zs_cars, ... (20 tasks)" in listing
    with pytest.raises(SystemExit):
        main(["evaluate", "linprobe", "--help"])
    described = " ".join(capsys.readouterr().out.split())
    linprobe = sorted(task.id for task in declared_tasks().values() if task.group == "linprobe")
    assert len(linprobe) > 4 and f"tasks, written as one JSON each into --out-dir: {', '.join(linprobe)}." in described
