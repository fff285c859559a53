"""The newcomer's path (issue 45): the README's commands for one table, one row, claims of a table and your model,
read out of its "What you came for" section and run as written in a fresh folder at smoke scale, on the tests' tiny
world (`helpers.workflow.TINY` added to each command's config files): the one-row and your-model row targets for
real, with your model an open_clip folder of random weights at the README's `path/to/folder`, and `hypvl evaluate` on
it as the README gives it; the targets of many jobs (a whole table of trainings, every table) as dry runs."""

import csv
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from helpers import REPO
from helpers.library import OPEN_CLIP_CFG, open_clip_folder
from helpers.workflow import TINY

README = REPO / "README.md"
REAL = ("One row", "Your model")  # their first command run for real; the others planned (-n): tens to hundreds of jobs


def came_for() -> dict[str, tuple[list[str], list[str]]]:
    """Section of "What you came for" -> (its bash commands, comments dropped; its YAML blocks)."""
    part = README.read_text().split("## What you came for", 1)[1].split("\n## ", 1)[0]
    found = {}
    for title, body in re.findall(r"^### (.+?)\n(.*?)(?=^### |\Z)", part, flags=re.M | re.S):
        commands = [line.split(" #", 1)[0].strip() for block in re.findall(r"```bash\n(.*?)```", body, re.S)
                    for line in block.splitlines() if line.strip()]
        found[title.strip()] = (commands, re.findall(r"```yaml\n(.*?)```", body, re.S))
    return found


def with_tiny(command: str, tiny: Path) -> list[str]:
    """The README's snakemake command run from another folder: its Snakefile named, the tiny settings first among its
    config files (a command's own --configfile goes over them)."""
    words = shlex.split(command)
    if "--configfile" in words:
        at = words.index("--configfile") + 1
        words[at:at] = [str(tiny)]
    else:
        words += ["--configfile", str(tiny)]
    return [str(Path(sys.executable).parent / "snakemake"), "-s", str(REPO / "Snakefile"), *words[1:]]


def test_the_readmes_commands_run_as_written_in_a_fresh_folder(tmp_path):
    sections = came_for()
    assert {"One table", "One row", "Claims of a table", "Your model"} <= set(sections)
    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(yaml.safe_dump(TINY))
    [mine] = sections["Your model"][1]
    (tmp_path / "mine.yaml").write_text(mine)  # the README's config of your model, as written
    source = yaml.safe_load(mine)["extra_models"]["mine"]["source"].split(":", 1)[1]
    _, folder = open_clip_folder(tmp_path)
    (tmp_path / source).parent.mkdir(parents=True)
    folder.rename(tmp_path / source)
    ran = []
    for title in ("One table", "One row", "Claims of a table", "Your model"):
        for number, command in enumerate(sections[title][0]):
            assert command.startswith("snakemake "), command
            argv = with_tiny(command, tiny) + ([] if title in REAL and number == 0 else ["-n"])
            run = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=900)
            assert run.returncode == 0, f"{command}\n{run.stderr[-3000:]}"
            ran.append(command)
    assert len(ran) >= 6
    row = tmp_path / "results" / "smoke" / "rows" / "hycoclip" / "table4" / "minus_cont_ibox_t.csv"
    extra = tmp_path / "results" / "smoke" / "rows" / "hycoclip" / "table1" / "extra__mine.csv"
    rows = {path: list(csv.DictReader(path.open())) for path in (row, extra)}
    assert len(rows[row]) == 5 and {line["verdict"] for line in rows[row]} == {"not_comparable"}  # smoke: all measured
    assert len(rows[extra]) == 16 and {line["verdict"] for line in rows[extra]} == {"extra"}  # numbers, no verdict
    # without the workflow, as the README gives it (one group; <folder> and DIR filled in)
    line = next(line for line in README.read_text().splitlines() if line.startswith("Without the workflow: `"))
    words = shlex.split(line.split("`")[1].replace("<group>", "zeroshot").replace("<folder>", source)
                        .replace("DIR", "by_hand"))
    run = subprocess.run([sys.executable, "-m", "hypvl.cli", *words[1:], "--configfile", str(tiny)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "by_hand" / "zs_imagenet.json").is_file()
    # the same rows from a moved (or freshly cloned) checkout make no model again: a spec's path is no tracked param
    # of a job making a model; the comparisons, whose inputs are the checkout's spec and printed numbers, are redone
    moved = tmp_path / "elsewhere" / "hypvl"
    moved.mkdir(parents=True)
    for part in ("Snakefile", "workflows", "replication", "expected", "baselines"):
        (shutil.copytree if (REPO / part).is_dir() else shutil.copy2)(REPO / part, moved / part)
    for title in REAL:
        argv = with_tiny(sections[title][0][0], tiny)
        argv[argv.index("-s") + 1] = str(moved / "Snakefile")
        run = subprocess.run([*argv, "-n"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        assert planned_rules(run.stdout) <= {"compare_row"}, (title, planned_rules(run.stdout))


def planned_rules(dry_run: str) -> set[str]:
    """The rules of a dry run's job table (Snakemake's "Job stats")."""
    table = dry_run.split("Job stats:", 1)[1].split("\n\n", 1)[0] if "Job stats:" in dry_run else ""
    return {line.split()[0] for line in table.splitlines()[3:] if line.split() and line.split()[0] != "total"}


def test_the_manuals_open_clip_folder_recipe_writes_a_folder_the_suite_reads(tmp_path, monkeypatch):
    """docs/your-model.md's recipe for an open_clip folder, run as written but for the architecture (a tiny one
    registered with open_clip, as any of `open_clip.list_models()` is) and the weights (random: pretrained=None):
    the suite imports the folder it writes, with the same weights and the model's own preprocessing."""
    import open_clip
    import torch

    from hypvl.models.library_import import import_open_clip

    block = (REPO / "docs" / "your-model.md").read_text().split("## Writing a folder", 1)[1]
    [recipe] = re.findall(r"```python\n(.*?)```", block.split("\n## ", 1)[0], re.S)
    assert '"ViT-B-32", "laion2b_s34b_b79k", Path("path/to/folder")' in recipe
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "hypvl-tiny.json").write_text(json.dumps(OPEN_CLIP_CFG["model_cfg"]))
    open_clip.add_model_config(tmp_path / "configs")
    monkeypatch.chdir(tmp_path)
    torch.manual_seed(0)
    exec(recipe.replace('"ViT-B-32", "laion2b_s34b_b79k"', '"hypvl-tiny", None'), {})  # noqa: S102 (the manual's code)
    folder = tmp_path / "path" / "to" / "folder"
    written = torch.load(folder / "open_clip_pytorch_model.bin", weights_only=True)
    model = import_open_clip(folder, f"open_clip:{folder}")
    assert all(torch.equal(model.model.state_dict()[key], value) for key, value in written.items())
    assert model.image_size == 32 and json.loads((folder / "open_clip_config.json").read_text())[
        "preprocess_cfg"]["interpolation"] == "bicubic"
