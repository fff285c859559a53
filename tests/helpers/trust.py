"""Pieces shared by the trust tests: the command evaluating a checkpoint, the one line printed, and two cases of the
bad-input corpus that the fault tests also run."""

import yaml
from PIL import Image

from helpers.bad_input_builders import tiny_checkpoint, write
from helpers.format_fixtures import BUILDERS
from hypvl.data.formats.images import encode_image

BUILDERS_PNG = encode_image(Image.new("RGB", (4, 4)), "PNG")


def probe_into_a_folder_it_did_not_write(tmp_path):
    """`hypvl probe-splits sst2 --dest <the linear-probe folder>` (the set's name forgotten): the folder holds
    other sets and a note of the user's."""
    source = tmp_path / "source"
    for split in ("train", "val"):
        for label in ("negative", "positive"):
            (source / split / label).mkdir(parents=True)
            (source / split / label / "0.png").write_bytes(BUILDERS_PNG)
    dest = tmp_path / "linear_probe"
    write(dest / "cifar10" / "train" / "0000" / "000000.png", "another set")
    write(dest / "notes.txt", "mine")
    argv = ["probe-splits", "sst2", "--source", str(source), "--dest", str(dest)]
    return argv, dest, r"holds files this step did not write \(cifar10/train/0000/000000\.png, notes\.txt\); not " \
                       r"replaced", [dest / "train", dest / "val"]


def ground_into_the_raw_folder(tmp_path):
    """`hypvl ground` with the grounded folder configured as the raw one (`corpora: {grit: train/grit}`)."""
    path, _, _ = BUILDERS["grit"](tmp_path / "data" / "train")
    config = write(tmp_path / "config.yaml", yaml.safe_dump({"data_dir": str(tmp_path / "data"),
                                                             "corpora": {"grit": "train/grit"}}))
    argv = ["ground", "--corpus", "grit", "--configfile", str(config)]
    return argv, "corpora.grit", "must be separate folders: grounding writes its folder whole", \
        [path.parent / "grounding.json"]


def evaluate_argv(tmp_path, out):
    tiny_checkpoint(tmp_path / "checkpoint.pt")
    return ["evaluate", "zeroshot", "--experiment", "e", "--checkpoint", str(tmp_path / "checkpoint.pt"),
            "--out-dir", str(out), "--tasks", "zs_cifar10"]


def one_line(capsys) -> str:
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    return lines[0]
