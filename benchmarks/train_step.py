"""Training step throughput: our CLIP, MERU, syntax-preserving MERU, HyCoCLIP and PoinCLIP steps against
open_clip's own CLIP and ClipLoss.

Both sides train the same architecture (ViT with the config's patch, width, depth and heads at the config's
image size; CLIP's text transformer), on the same random batch (syntax-preserving MERU: with a parse of
12 one-token words per caption, a random dependency tree), with AdamW, on one CPU thread; the two are
timed in interleaved repetitions and the median step of each is kept. `--size smoke` uses default.yaml's
model, `--size paper` full.yaml's (ViT-S/16 at 224 px, 12-layer width-512 text transformer). Also reported:
the peak resident memory of the process (it holds every model of the run). PoinCLIP's step is also given
relative to MERU's (same encoders and batch; the Poincaré geometry and its entropy-ordered cone loss differ).

`--accumulation`: instead, the trainer's step (`hypvl.train.step.TrainStep`) of CLIP, MERU and HyCoCLIP at one
global batch, in one pass and in `--accum-steps` micro-batches (`train.accum_steps`), each configuration in a fresh
process: median seconds per step and the step's memory, with their ratios. Memory on the CPU: the growth of the
process's peak resident memory over what it held before its first step (activations, gradients, the optimiser's
moments; the peak reset with /proc/self/clear_refs); on a GPU (`--device cuda`): the peak allocated over what the
model, its gradients and the optimiser's moments hold between steps.

    python benchmarks/train_step.py --size smoke
    python benchmarks/train_step.py --size smoke --accumulation --batch-size 256
"""

import argparse
import math
import multiprocessing
import resource
import statistics
import time

import open_clip
import torch
from open_clip.loss import ClipLoss
from open_clip.model import CLIPTextCfg, CLIPVisionCfg

from hypvl.config import load_config
from hypvl.models.build import backbone_config, build_model
from hypvl.train.optim import build_optimizer, build_scheduler
from hypvl.train.step import TrainStep, precision_on
from hypvl.train.syntax import collate_syntax, syntax_targets

FULL = "workflows/config/full.yaml"


def open_clip_model(model_cfg: dict, backbone: str):
    """open_clip's CLIP with our architecture: same ViT and text transformer sizes, same embedding width."""
    vit, text = backbone_config(model_cfg, backbone), model_cfg["text"]
    vision = CLIPVisionCfg(layers=vit["depth"], width=vit["width"], head_width=vit["width"] // vit["heads"],
                           patch_size=vit["patch"], image_size=model_cfg["image_size"])
    textual = CLIPTextCfg(context_length=text["context_length"], vocab_size=text.get("vocab_size", 49408),
                          width=text["width"], heads=text["heads"], layers=text["layers"])
    return open_clip.model.CLIP(model_cfg["embed_dim"], vision, textual)


class PeerCLIP(torch.nn.Module):
    """open_clip's CLIP (our architecture) and its ClipLoss, shaped as hypvl's models are for the trainer's step
    (`hypvl.train.step.TrainStep`): forward(batch) -> {"loss"}, clamp_scalars()."""

    def __init__(self, model_cfg: dict, backbone: str):
        super().__init__()
        self.clip, self.clip_loss = open_clip_model(model_cfg, backbone), ClipLoss()

    def clamp_scalars(self) -> None:
        """open_clip's clamp of the logit scale (at most 100), which its training loop applies after each step."""
        with torch.no_grad():
            self.clip.logit_scale.clamp_(0, math.log(100))

    def forward(self, batch: dict) -> dict:
        image, text, scale = self.clip(batch["images"], batch["tokens"])
        return {"loss": self.clip_loss(image, text, scale)}


def batch_of(model_cfg: dict, size: int, boxes: bool, device="cpu") -> dict:
    """A random batch of `size` images and full-context token rows (and box crops and phrases), drawn on `device`."""
    generator = torch.Generator(device).manual_seed(0)
    image = (size, 3, model_cfg["image_size"], model_cfg["image_size"])
    text = (size, model_cfg["text"]["context_length"])
    batch = {"images": torch.rand(image, generator=generator, device=device),
             "tokens": torch.randint(1, 49000, text, generator=generator, device=device)}
    if boxes:
        batch["box_images"] = torch.rand(image, generator=generator, device=device)
        batch["box_tokens"] = torch.randint(1, 49000, text, generator=generator, device=device)
    return batch


def syntax_of(batch: dict, words: int = 12) -> dict:
    """`batch` with syntax targets: captions of `words` one-token words, each attached to a random earlier word."""
    generator = torch.Generator().manual_seed(1)
    size, context = batch["tokens"].shape
    targets = []
    for _ in range(size):
        heads = [0, *(int(torch.randint(0, i, (1,), generator=generator)) for i in range(1, words))]
        parse = {"tokens": ["w"] * words, "heads": heads, "pos": ["NOUN"] * words}
        targets.append(syntax_targets(parse, [[i + 1] for i in range(words)], context))
    return {**batch, **collate_syntax(targets)}


def ours(method: str, model_cfg: dict, backbone: str, batch: dict):
    model = build_model(method, backbone, model_cfg).train()
    optimizer = build_optimizer(model, 5e-4, 0.2, (0.9, 0.98))

    def step():
        model.clamp_scalars()
        loss = model.loss(batch)["loss"]
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def theirs(model_cfg: dict, backbone: str, batch: dict):
    model = PeerCLIP(model_cfg, backbone).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.2, betas=(0.9, 0.98), fused=True)

    def step():
        loss = model(batch)["loss"]
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def median_seconds(steps: dict, repeats: int, warmup: int = 3) -> dict[str, float]:
    """Median seconds per step of each named step function, timed one step each in turn, `repeats` times."""
    for step in steps.values():
        for _ in range(warmup):
            step()
    times = {name: [] for name in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def measure(size: str, backbone: str = "vit_s16", batch_size: int = 64, repeats: int = 30) -> dict:
    """Median step seconds and images/s of open_clip's CLIP and our methods, plus peak RSS."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model_cfg = load_config([FULL] if size == "paper" else [])["model"]
    plain, boxed = batch_of(model_cfg, batch_size, False), batch_of(model_cfg, batch_size, True)
    steps = {"open_clip CLIP": theirs(model_cfg, backbone, plain), "CLIP": ours("clip", model_cfg, backbone, plain),
             "MERU": ours("meru", model_cfg, backbone, plain),
             "syntax MERU": ours("syntax_meru", model_cfg, backbone, syntax_of(plain)),
             "HyCoCLIP": ours("hycoclip", model_cfg, backbone, boxed),
             "PoinCLIP": ours("poinclip", model_cfg, backbone, plain)}
    seconds = median_seconds(steps, repeats)
    return {"size": size, "backbone": backbone, "batch": batch_size, "seconds": seconds,
            "images_per_s": {name: batch_size / s for name, s in seconds.items()},
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def resident_kb(field: str) -> int:
    """A memory figure of this process from /proc/self/status (VmRSS: now, VmHWM: its peak), in kB."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def trainer_steps(method: str, accum_steps: int, settings: dict) -> dict:
    """Median seconds of the trainer's step of `method` on one random batch in `accum_steps` micro-batches (on one
    CPU thread, or the GPU) and the step's memory (MB): on the CPU the growth of peak resident memory over the
    steps, on a GPU the peak allocated over what the model and optimiser held before. `settings`: those of
    `measure_accumulation`. Run it in a fresh process."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    device = torch.device(settings["device"])
    model_cfg = load_config([FULL] if settings["size"] == "paper" else [])["model"]
    model = build_model(method, settings["backbone"], model_cfg).to(device).train()
    optimizer = build_optimizer(model, 5e-4, 0.2, (0.9, 0.98))
    step = TrainStep(model, optimizer, build_scheduler(optimizer, 0, 10**6),
                     precision_on(settings["precision"], device), device, accum_steps)
    batch = batch_of(model_cfg, settings["batch_size"], method == "hycoclip", device)
    cuda = device.type == "cuda"
    if cuda:
        step(batch)  # the optimiser's moments exist from here on
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    else:
        before = resident_kb("VmRSS") * 1024
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")  # VmHWM := VmRSS
    times = []
    for _ in range(2 + settings["repeats"]):
        start = time.perf_counter()
        step(batch)
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    peak = torch.cuda.max_memory_allocated() if cuda else resident_kb("VmHWM") * 1024
    return {"seconds": statistics.median(times[2:]), "memory_mb": (peak - before) / 2**20}


def measure_accumulation(size: str = "smoke", backbone: str = "vit_s16", batch_size: int = 256, accum_steps: int = 4,
                         repeats: int = 10, device: str = "cpu", precision: str = "fp32") -> dict:
    """`trainer_steps` of CLIP, MERU and HyCoCLIP in one pass and in `accum_steps` micro-batches, each configuration
    in a fresh process: {method: {1: figures, accum_steps: figures}}."""
    settings = {"size": size, "backbone": backbone, "batch_size": batch_size, "repeats": repeats, "device": device,
                "precision": precision}
    context = multiprocessing.get_context("spawn")
    results = {}
    for method in ("clip", "meru", "hycoclip"):
        for steps in (1, accum_steps):
            with context.Pool(1) as pool:
                results.setdefault(method, {})[steps] = pool.apply(trainer_steps, (method, steps, settings))
    return results


def report_accumulation(args) -> None:
    results = measure_accumulation(args.size, args.backbone, args.batch_size, args.accum_steps, args.repeats,
                                   args.device, args.precision)
    print(f"{args.size} {args.backbone} on {args.device} ({args.precision}), global batch {args.batch_size}: one pass "
          f"vs {args.accum_steps} micro-batches of {args.batch_size // args.accum_steps}")
    for method, (one, split) in ((m, r.values()) for m, r in results.items()):
        print(f"{method:9s} {1000 * one['seconds']:8.1f} vs {1000 * split['seconds']:8.1f} ms/step "
              f"(x{split['seconds'] / one['seconds']:.2f})  memory {one['memory_mb']:8.1f} vs "
              f"{split['memory_mb']:8.1f} MB (x{split['memory_mb'] / one['memory_mb']:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=["smoke", "paper"], default="smoke")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--accumulation", action="store_true", help="one pass vs micro-batches (see above)")
    parser.add_argument("--accum-steps", type=int, default=4)
    parser.add_argument("--backbone", default="vit_s16", help="with --accumulation")
    parser.add_argument("--device", default="cpu", help="with --accumulation: cpu or cuda")
    parser.add_argument("--precision", default="fp32", choices=["fp16", "bf16", "fp32"], help="with --accumulation")
    args = parser.parse_args()
    if args.accumulation:
        report_accumulation(args)
        return
    result = measure(args.size, batch_size=args.batch_size, repeats=args.repeats)
    base = result["seconds"]["open_clip CLIP"]
    for name, seconds in result["seconds"].items():
        print(f"{args.size} {name:15s} {1000 * seconds:8.1f} ms/step  {args.batch_size / seconds:8.1f} images/s  "
              f"open_clip/ours {base / seconds:5.2f}x")
    for name in ("syntax MERU", "PoinCLIP"):
        print(f"{name} step / MERU step {result['seconds'][name] / result['seconds']['MERU']:.2f}x")
    print(f"peak RSS {result['peak_rss_mb']:.0f} MB")


if __name__ == "__main__":
    main()
