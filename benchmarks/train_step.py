"""Training step throughput: our CLIP, MERU, syntax-preserving MERU, HyCoCLIP and PoinCLIP steps against
open_clip's own CLIP and ClipLoss.

Both sides train the same architecture (ViT with the config's patch, width, depth and heads at the config's
image size; CLIP's text transformer), on the same random batch (syntax-preserving MERU: with a parse of
12 one-token words per caption, a random dependency tree), with AdamW, on one CPU thread; the two are
timed in interleaved repetitions and the median step of each is kept. `--size smoke` uses default.yaml's
model, `--size paper` full.yaml's (ViT-S/16 at 224 px, 12-layer width-512 text transformer). Also reported:
the peak resident memory of the process (it holds every model of the run). PoinCLIP's step is also given
relative to MERU's (same encoders and batch; the Poincaré geometry and its entropy-ordered cone loss differ).

    python benchmarks/train_step.py --size smoke
"""

import argparse
import resource
import statistics
import time

import open_clip
import torch
from open_clip.loss import ClipLoss
from open_clip.model import CLIPTextCfg, CLIPVisionCfg

from hypvl.config import load_config
from hypvl.models.build import build_model
from hypvl.train.optim import build_optimizer
from hypvl.train.syntax import collate_syntax, syntax_targets

FULL = "workflows/config/full.yaml"


def open_clip_model(model_cfg: dict, backbone: str):
    """open_clip's CLIP with our architecture: same ViT and text transformer sizes, same embedding width."""
    vit, text = model_cfg["backbones"][backbone], model_cfg["text"]
    vision = CLIPVisionCfg(layers=vit["depth"], width=vit["width"], head_width=vit["width"] // vit["heads"],
                           patch_size=vit["patch"], image_size=model_cfg["image_size"])
    textual = CLIPTextCfg(context_length=text["context_length"], vocab_size=text.get("vocab_size", 49408),
                          width=text["width"], heads=text["heads"], layers=text["layers"])
    return open_clip.model.CLIP(model_cfg["embed_dim"], vision, textual)


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
    model = open_clip_model(model_cfg, backbone).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.2, betas=(0.9, 0.98), fused=True)
    loss_fn = ClipLoss()

    def step():
        image, text, scale = model(batch["images"], batch["tokens"])
        loss = loss_fn(image, text, scale)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=["smoke", "paper"], default="smoke")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
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
