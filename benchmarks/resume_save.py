"""How long a paper-size run takes to write its resume checkpoint: what a run stopped by a signal (a cluster's time
limit or preemption; hypvl.train.stopping) must do between SIGTERM and SIGKILL (SLURM's KillWait, 30 s by default).

MERU at each backbone with full.yaml's model (HyCoCLIP and CLIP have the same parameters but for a few scalars),
randomly initialised, with AdamW's state filled by one step, written as the trainer writes it
(`hypvl.train.resume.save_resume`, atomically) into `--dir` (default: a temporary folder in the current one; run it
on the file system your runs write to). Prints per backbone the parameters, the file's size and the seconds to write
it as the trainer does and with the file flushed to the disk too (os.fsync), medians of `--repeats`, as a table.

    PYTHONPATH=src python benchmarks/resume_save.py [--backbones vit_s16,vit_b16,vit_l16] [--dir DIR] [--repeats 3]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from hypvl.config import load_config  # noqa: E402
from hypvl.models.build import build_model  # noqa: E402
from hypvl.train.optim import build_optimizer  # noqa: E402
from hypvl.train.resume import save_resume  # noqa: E402

FULL = HERE.parent / "workflows" / "config" / "full.yaml"


def trained_state(backbone: str, config: dict) -> tuple[int, dict]:
    """MERU at `backbone`: its parameter count, and what the trainer's resume checkpoint holds after one step."""
    torch.manual_seed(0)
    model = build_model("meru", backbone, config["model"])
    optimizer = build_optimizer(model, 1e-4, 0.2, (0.9, 0.98))
    for param in model.parameters():
        param.grad = torch.zeros_like(param)
    optimizer.step()  # AdamW's two moments for every parameter
    state = {"recipe": {}, "fingerprint": "", "layout": {}, "step": 1, "model": model.state_dict(),
             "optimizer": optimizer.state_dict(), "scheduler": {}, "scaler": {}, "streams": [], "rows": [],
             "seconds": 0.0}
    return sum(p.numel() for p in model.parameters()), state


def seconds_to_write(state: dict, path: Path, flushed: bool) -> float:
    start = time.perf_counter()
    save_resume(path, state)
    if flushed:
        with open(path, "rb") as handle:
            os.fsync(handle.fileno())
    return time.perf_counter() - start


def measure(backbones: list[str], folder: Path, repeats: int = 3) -> list[dict]:
    """Per backbone: parameters, resume.pt's bytes, and the median seconds to write it as the trainer does
    (`write_s`) and flushed to the disk (`fsync_s`), into a temporary folder in `folder`."""
    config, rows = load_config([FULL]), []
    with tempfile.TemporaryDirectory(prefix="hypvl-resume-", dir=folder) as scratch:
        path = Path(scratch) / "resume.pt"
        for backbone in backbones:
            params, state = trained_state(backbone, config)
            times = {False: [], True: []}
            for _ in range(repeats):  # alternating, so that both see the disk's writeback alike
                for flushed in times:
                    times[flushed].append(seconds_to_write(state, path, flushed))
            rows.append({"backbone": backbone, "params": params, "bytes": path.stat().st_size,
                         "write_s": statistics.median(times[False]), "fsync_s": statistics.median(times[True])})
            del state
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbones", default="vit_s16,vit_b16,vit_l16")
    parser.add_argument("--dir", type=Path, default=Path.cwd())
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print("| backbone | parameters | resume.pt | write (page cache) | write + fsync |\n|---|---|---|---|---|")
    for row in measure(args.backbones.split(","), args.dir, args.repeats):
        print(f"| {row['backbone']} | {row['params'] / 1e6:.0f} M | {row['bytes'] / 1e9:.2f} GB | "
              f"{row['write_s']:.1f} s | {row['fsync_s']:.1f} s |", flush=True)


if __name__ == "__main__":
    main()
