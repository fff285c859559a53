"""Extras by feature: the core package (`pip install .`) evaluates a checkpoint with none of the workflow engine,
the NLP stack, the plots or COCO's tools installed; a feature whose extra is missing says which extra in one line.

"Not installed" is made real, not mocked: the subprocess runs without Python's site machinery (`-S`), on a folder of
links to every entry of this environment's site-packages except the optional distributions (their modules and
their metadata), so `import spacy` and `importlib.metadata.version("snakemake")` fail as in a fresh environment.
"""

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import torch
from PIL import Image

from helpers import REPO
from helpers.bad_input_builders import tiny_checkpoint
from hypvl.data.formats.imagefolder import write_imagefolder
from hypvl.errors import InputError, require

# top-level names (modules, and the distributions' .dist-info folders) of what only the extras install
OPTIONAL = ("snakemake", "spacy", "en_core_web_sm", "thinc", "pycocotools", "matplotlib", "mpl_toolkits", "pylab",
            "pyarrow", "geoopt", "pytest", "_pytest")


def core_only(folder: Path) -> Path:
    """A folder of links to this environment's site-packages, the optional distributions left out."""
    site = Path(sysconfig.get_paths()["purelib"])
    if folder.is_dir():
        return folder
    folder.mkdir()
    for entry in site.iterdir():
        if entry.suffix == ".pth" or entry.name.lower().startswith(OPTIONAL):
            continue
        (folder / entry.name).symlink_to(entry)
    return folder


def run_core(tmp_path, *args) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{REPO / 'src'}:{core_only(tmp_path / 'site')}",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-S", *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)


def test_the_core_evaluates_a_checkpoint_without_any_extra(tmp_path):
    g = torch.Generator().manual_seed(0)
    items = [(i % 2, Image.fromarray((torch.rand(20, 20, 3, generator=g) * 255).byte().numpy())) for i in range(6)]
    write_imagefolder(tmp_path / "data" / "eval" / "classification" / "cifar10", "test", ["cat", "dog"], items)
    tiny_checkpoint(tmp_path / "checkpoint.pt")
    probe = ("import importlib.util as u, sys; "
             f"sys.exit(any(u.find_spec(m) for m in {['snakemake', 'spacy', 'pycocotools', 'matplotlib']!r}))")
    assert run_core(tmp_path, "-c", probe).returncode == 0  # none of them importable there
    result = run_core(tmp_path, "-m", "hypvl.cli", "evaluate", "zeroshot", "--experiment", "e", "--checkpoint",
                      "checkpoint.pt", "--out-dir", "metrics", "--tasks", "zs_cifar10", "--config-json",
                      json.dumps({"data_dir": "data"}))
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((tmp_path / "metrics" / "zs_cifar10.json").read_text())
    assert record["n_samples"] == 6 and 0 <= record["metrics"]["top1"] <= 100


def test_grounding_without_its_extra_names_the_extra(tmp_path):
    result = run_core(tmp_path, "-c", "from hypvl.grounding.phrases import load_spacy\n"
                                      "try:\n    load_spacy('en_core_web_sm')\n"
                                      "except Exception as error:\n    print(type(error).__name__, error)")
    assert result.stdout.strip() == ("InputError spacy is not installed: it comes with hypvl's [grounding] extra "
                                     "(pip install 'hypvl[grounding]', or '.[grounding]' in a checkout)")


def test_require_names_the_extra_only_for_the_module_itself(tmp_path, monkeypatch):
    with pytest.raises(InputError, match=r"^no_such_module_x is not installed: it comes with hypvl's \[report\]"):
        require("no_such_module_x", "report")
    (tmp_path / "broken_module_x.py").write_text("import missing_inside_x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="missing_inside_x"):  # a broken installation is not a missing extra
        require("broken_module_x", "report")


def test_every_extra_the_code_names_is_declared():
    import tomllib

    declared = set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    named = {line.split('require("', 1)[1].split('"')[2] for path in (REPO / "src").rglob("*.py")
             for line in path.read_text().splitlines() if 'require("' in line}
    assert named and named <= declared


def test_the_cpu_install_takes_the_locks_versions_which_its_cpu_wheels_satisfy():
    """docs/install.md's CPU-only install: its PyTorch command names the lock's torch and torchvision, and the CPU
    wheels' versions (`<pin>+cpu`) satisfy the lock's pins, so the project's install after it keeps them and pulls
    no CUDA build (a local version label matches a pin without one, PEP 440)."""
    import re

    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    lock = dict(re.findall(r"^(torch|torchvision)==(\S+)$", (REPO / "constraints.txt").read_text(), re.M))
    install = (REPO / "docs" / "install.md").read_text().split("## A CPU-only install", 1)[1].split("\n## ", 1)[0]
    [command] = [line for line in install.splitlines() if "download.pytorch.org/whl/cpu" in line]
    assert dict(re.findall(r"\b(torch|torchvision)==(\S+)", command)) == lock
    for package, version in lock.items():
        assert Version(f"{version}+cpu") in SpecifierSet(f"=={version}"), package
        assert Version(f"{version}+cu130") in SpecifierSet(f"=={version}")  # why the order of the two installs matters
        assert f"`{version}+cpu`" in install
