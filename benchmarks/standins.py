"""What weights from outside cost at smoke scale: the wall time of each stand-in job (`hypvl write-standin`, then
`hypvl import-weights`, each a fresh process as the workflow runs it) for every layout, and the training step of
the transformers stand-ins (OpenAI's CLIP, ALIGN) against our CLIP's.

Checkpoints are freshly initialised models of the smoke config's sizes (a trained one has the same size); the
training steps use train_step.py's batch and interleaved timing (batch 64, one thread, median).

    python benchmarks/standins.py
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from train_step import batch_of, median_seconds, ours

from hypvl.config import load_config
from hypvl.models.build import build_model
from hypvl.models.checkpoints import save_checkpoint
from hypvl.outside.standins import standin_model
from hypvl.train.optim import build_optimizer

REPO = Path(__file__).resolve().parents[1]
# layout -> (spec, experiment whose source takes it, how its stand-in checkpoint is made)
LAYOUTS = {
    "released (MERU .pth)": ("meru", "meru_released_meru_vits", "meru"),
    "open_clip": ("hierarcaps", "hcaps_openclip_b", "clip"),
    "transformers CLIP": ("hierarcaps", "hcaps_clip_b", "transformers:clip"),
    "transformers ALIGN": ("hierarcaps", "hcaps_align", "transformers:align"),
}


def hypvl(*args) -> float:
    """Seconds one `hypvl` command takes, start-up included."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hypvl.cli", *args], cwd=REPO, check=True, capture_output=True)
    return time.perf_counter() - start


def checkpoint(made: str, path: Path) -> None:
    model_cfg = load_config()["model"]
    if made.startswith("transformers:"):
        model = standin_model(made.split(":")[1], model_cfg, "vit_s16", ["a red cube left of a blue ball"])
        recipe = model.recipe()
    else:
        model = build_model(made, "vit_s16", model_cfg)
        recipe = {"method": made, "backbone": "vit_s16", "overrides": {}, "model_cfg": model_cfg}
    save_checkpoint(path, model, recipe, step=0)


def job_seconds(folder: Path) -> dict[str, tuple[float, float]]:
    """Layout -> (write-standin seconds, import-weights seconds)."""
    result = {}
    for layout, (spec, experiment, made) in LAYOUTS.items():
        source = folder / f"{experiment}.pt"
        checkpoint(made, source)
        kind = {"meru": "released", "clip": "open_clip"}.get(made, "transformers")
        named = ["--file", "meru_vit_s.pth"] if kind == "released" else []
        weights = folder / "weights" / experiment
        write = hypvl("write-standin", "--kind", kind, *named, "--checkpoint", str(source), "--out", str(weights))
        imported = hypvl("import-weights", "--spec", f"replication/{spec}.yaml", "--experiment", experiment,
                         "--weights", str(weights), "--out", str(folder / "models" / experiment / "checkpoint.pt"))
        result[layout] = (write, imported)
    return result


def standin_steps(batch_size: int = 64, repeats: int = 30) -> dict[str, float]:
    """Median seconds per training step of the transformers stand-ins and of our CLIP."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model_cfg = load_config()["model"]
    batch = batch_of(model_cfg, batch_size, False)
    steps = {"CLIP": ours("clip", model_cfg, "vit_s16", batch)}
    for architecture in ("clip", "align"):
        model = standin_model(architecture, model_cfg, "vit_s16", ["a red cube left of a blue ball"]).train()
        optimizer = build_optimizer(model, 5e-4, 0.2, (0.9, 0.98))
        tokens = model.tokenizer(["a red cube left of a blue ball"] * batch_size)
        own = {"images": batch["images"], "tokens": tokens}

        def step(model=model, optimizer=optimizer, own=own):
            model.clamp_scalars()
            loss = model.loss(own)["loss"]
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

        steps[f"transformers {architecture.upper()} stand-in"] = step
    return median_seconds(steps, repeats)


def measure() -> dict:
    with tempfile.TemporaryDirectory() as folder:
        jobs = job_seconds(Path(folder))
    return {"jobs": jobs, "steps": standin_steps()}


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    result = measure()
    for layout, (write, imported) in result["jobs"].items():
        print(f"{layout:22s} write-standin {write:5.1f} s  import-weights {imported:5.1f} s")
    base = result["steps"]["CLIP"]
    for name, seconds in result["steps"].items():
        print(f"{name:32s} {1000 * seconds:7.1f} ms/step  {seconds / base:4.2f}x our CLIP's")


if __name__ == "__main__":
    main()
