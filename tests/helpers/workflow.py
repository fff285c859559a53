"""The workflow at a tiny setting: its config and the `snakemake` command."""

import subprocess
import sys
from pathlib import Path

import yaml

from helpers import REPO


TINY = {
    "smoke_world": {"seed": 0, "image_size": 32, "grit_samples": 48, "redcaps_samples": 48, "cc3m_samples": 8,
                    "per_class": 2, "probe_train_per_class": 1, "probe_val_per_class": 1, "retrieval_images": 4,
                    "vlchecklist_per_group": 2, "vg_attribution_per_pair": 2, "hierarcaps_test": 4,
                    "hierarcaps_train": 4, "shard_size": 24},
    "grounding": {"crop_size": 32},
    "model": {"image_size": 16, "embed_dim": 8, "text": {"context_length": 16, "width": 16, "layers": 1, "heads": 2},
              "backbones": {"vit_s16": {"patch": 8, "width": 16, "depth": 1, "heads": 2},
                            "vit_b16": {"patch": 8, "width": 24, "depth": 1, "heads": 2}}},
    "train": {"steps": 2, "batch_size_scale": 0.0105, "shuffle_buffer": 8},
}


def snakemake(*args, cwd=REPO, env=None) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "snakemake"
    return subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True, timeout=1200, env=env)


def tiny_config(tmp_path) -> Path:
    config = {**TINY, "data_dir": str(tmp_path / "data"), "results_dir": str(tmp_path / "results"),
              "reports_dir": str(tmp_path / "reports")}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(config))
    return path
