"""Evaluation harness overhead: zero-shot classification and retrieval, task wall time vs bare encoder time.

For each case the task runs end to end (listing files, decoding and resizing images, tokenizing,
encoding, scoring, metrics), then the same model encodes the same already decoded and resized image
tensors and already tokenized texts; harness overhead = 1 - forward / total (target <= 15%). Both are
timed `--repeats` times, alternating, and the fastest of each is kept (the machine may be shared); the
same is reported for CPU time (all threads of the process), which other processes disturb less.

Cases: `smoke` uses a smoke world's ImageNet folder and COCO captions (`--smoke-root`, e.g. data/smoke);
`large` writes a synthetic COCO-captions set of `--images` JPEGs x `--captions-per-image` captions (default
5k x 25k, COCO val2017's size) and, for classification, an image folder of the same images and a CLIP_benchmark
webdataset of them (1,000 a shard, as CLIP_benchmark's; `zs wds`, with the time and memory its index takes). The model is a
MERU with random weights: `--model smoke` (default.yaml's `model`: ViT at 32 px, width 64, 2 layers) or
`--model paper` (full.yaml's: ViT-S/16 at 224 px, 12-layer text transformer), on the CPU.
`image_pipeline` measures the image path alone on photo-sized JPEGs (benchmarks/gpu, on a GPU).

    python benchmarks/eval_throughput.py --smoke-root data/smoke
"""

import argparse
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from hypvl.config import load_config
from hypvl.data.catalog import load_dataset_info
from hypvl.data.formats.classification_split import read_classification_split
from hypvl.data.formats.clip_benchmark_wds import ClipBenchmarkDataset, LabelledImage, write_clip_benchmark_wds
from hypvl.data.formats.coco_captions import read_coco_captions, write_coco_captions
from hypvl.data.formats.common import CaptionedImage
from hypvl.data.formats.imagefolder import load_image, write_imagefolder
from hypvl.data.transforms import resize_center_crop, squeeze, to_tensor_batch
from hypvl.runtime.devices import device_encoder, on_device
from hypvl.evaluate.features import LOADER_THREADS, encode_images, set_loader_workers
from hypvl.evaluate.retrieval import evaluate_retrieval
from hypvl.evaluate.zeroshot import evaluate_zero_shot
from hypvl.models.build import build_model
from hypvl.models.encoders import Tokenizer

WORDS = "a the dog cat red blue small large car tree boat sky on in near two three with of man woman".split()


@torch.no_grad()
def encode_only(model, pixels: list[torch.Tensor], tokens: list[torch.Tensor]) -> None:
    """Encode pre-decoded image batches and pre-tokenized text batches (the bare encoder work)."""
    for batch in pixels:
        model.encode_image(batch)
    for batch in tokens:
        model.encode_text(batch)


def batches(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def timed(function) -> tuple[float, float]:
    """(wall, CPU) seconds of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    return time.perf_counter() - wall, time.process_time() - cpu


def fastest(repeats: int, task, forward) -> dict[str, tuple[float, float]]:
    """Best (task, forward) seconds over `repeats` alternating runs, for wall and for CPU time."""
    runs = [(timed(task), timed(forward)) for _ in range(repeats)]
    return {clock: (min(r[0][i] for r in runs), min(r[1][i] for r in runs)) for i, clock in enumerate(("wall", "cpu"))}


def report(case: str, task: str, times: dict[str, tuple[float, float]], detail: str) -> None:
    figures = "  ".join(f"{clock} {total:7.2f} s vs forward {forward:7.2f} s = overhead {100 * (1 - forward / total):5.1f}%"
                        for clock, (total, forward) in times.items())
    print(f"{case:6s} {task:9s} {detail:34s} {figures}", flush=True)


def measure_zero_shot(model, tokenizer, root: Path, templates: list[str], size: int, batch: int,
                      repeats: int) -> tuple[dict, str]:
    """Fastest (task, forward) seconds per clock of zero-shot classification on a test split (either layout), and
    what it ran (for a webdataset, with the wall time and memory its index takes)."""
    start = time.perf_counter()
    dataset = read_classification_split(root, "test")
    index = time.perf_counter() - start
    tracemalloc.start()  # a second index, traced (tracing slows it): the memory the index holds
    again = read_classification_split(root, "test")
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del again
    prompts = [t.format(c) for c in dataset.class_names for t in templates]
    pixels = [to_tensor_batch([resize_center_crop(dataset.load(i), size) for i in chunk])
              for chunk in batches(range(len(dataset)), batch)]
    tokens = [tokenizer(chunk) for chunk in batches(prompts, batch)]
    times = fastest(repeats, lambda: evaluate_zero_shot(model, tokenizer, root, "test", templates, size, batch, "b"),
                    lambda: encode_only(model, pixels, tokens))
    indexed = f", index {index:.2f} s {held / 2**20:.1f} MiB" if dataset.layout == "clip_benchmark_wds" else ""
    return times, f"{len(dataset)} images, {len(prompts)} prompts{indexed}"


def measure_retrieval(model, tokenizer, captions_json: Path, size: int, batch: int, repeats: int) -> tuple[dict, str]:
    """Fastest (task, forward) seconds per clock of image-text retrieval on a COCO captions file."""
    items = read_coco_captions(captions_json)
    captions = [c for it in items for c in it.captions]
    pixels = [to_tensor_batch([squeeze(load_image(it.image), size) for it in chunk]) for chunk in batches(items, batch)]
    tokens = [tokenizer(chunk) for chunk in batches(captions, batch)]
    times = fastest(repeats, lambda: evaluate_retrieval(model, tokenizer, read_coco_captions(captions_json), size,
                                                        batch, "b"),
                    lambda: encode_only(model, pixels, tokens))
    return times, f"{len(items)} images x {len(captions)} captions"


def bench_zero_shot(case: str, *args) -> None:
    report(case, "zeroshot", *measure_zero_shot(*args))


def bench_retrieval(case: str, *args) -> None:
    report(case, "retrieval", *measure_retrieval(*args))


def write_large_set(root: Path, images: int, per_image: int, classes: int) -> tuple[Path, Path, Path]:
    """A COCO-captions set, an image folder and a CLIP_benchmark webdataset (the same JPEGs, `classes` labels) of
    random 64-px pictures."""
    rng = np.random.default_rng(0)
    folder = root / "val2017"
    folder.mkdir(parents=True)
    items, labelled = [], []
    for i in range(images):
        picture = Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8))
        path = folder / f"{i:012d}.jpg"
        picture.save(path, quality=90)
        items.append(CaptionedImage(path, tuple(" ".join(rng.choice(WORDS, 10)) for _ in range(per_image))))
        labelled.append((i % classes, picture))
    captions_json = root / "annotations" / "captions_val2017.json"
    write_coco_captions(captions_json, items)
    names = [f"class {c}" for c in range(classes)]
    write_imagefolder(root / "classes", "test", names, labelled)
    samples = tuple(LabelledImage(f"s{i:07d}", (folder / f"{i:012d}.jpg").read_bytes(), label)
                    for i, (label, _) in enumerate(labelled))
    write_clip_benchmark_wds(root / "wds", ClipBenchmarkDataset(tuple(names), ("a photo of a {c}.",), samples))
    return captions_json, root / "classes", root / "wds"


def write_photos(folder: Path, count: int, size=(500, 375)) -> list[Path]:
    """`count` JPEGs (quality 90) of smooth random pictures with grain, about 100 kB each at 500x375 (a photo's
    size and JPEG entropy)."""
    rng, paths = np.random.default_rng(0), []
    for i in range(count):
        coarse = Image.fromarray(rng.integers(0, 256, (size[1] // 10, size[0] // 10, 3), dtype=np.uint8))
        smooth = np.asarray(coarse.resize(size, Image.BICUBIC), dtype=np.int16)
        grain = rng.integers(-28, 29, smooth.shape, dtype=np.int16)
        paths.append(folder / f"{i:05d}.jpg")
        Image.fromarray(np.clip(smooth + grain, 0, 255).astype(np.uint8)).save(paths[-1], quality=90)
    return paths


def pipeline_rates(model, paths: list[Path], size: int, batch: int, workers: int) -> dict[str, float]:
    """Images/s of the evaluation's image path (hypvl.evaluate.features: decode, resize and centre crop, then
    `model.encode_image`) with its loader threads and with `workers` loader processes (`eval.num_workers`), of that
    loading alone (a null encoder) each way, and of the encoder alone (two batches decoded beforehand); after a
    warm-up batch (the device's kernels). Each path's rate over all of `paths` from its start (the processes' start
    and the first batch's wait included), and `steady_` its rate once running: the images of the second half over
    the time they added to a run of the first half alone."""

    encoder, device = device_encoder(model, "encode_image")

    def seconds(encode, processes: int, count: int) -> float:
        set_loader_workers(processes)
        try:
            return timed(lambda: encode_images(encode, lambda i: load_image(paths[i]), count,
                                               lambda image: resize_center_crop(image, size), batch, "benchmark",
                                               device))[0]
        finally:
            set_loader_workers(0)

    seconds(encoder, 0, min(batch, len(paths)))
    pixels = [to_tensor_batch([resize_center_crop(load_image(path), size) for path in chunk])
              for chunk in batches(paths[:2 * batch], batch)]
    rates = {"encoder": sum(map(len, pixels)) / timed(lambda: encode_only(model, pixels, []))[0]}
    half = len(paths) // 2
    for name, processes in (("threads", 0), ("processes", workers)):
        for part, encode in (("pipeline", encoder), ("loading", lambda images: images.new_zeros(len(images), 1))):
            whole, first = seconds(encode, processes, len(paths)), seconds(encode, processes, half)
            rates[f"{part}_{name}"] = len(paths) / whole
            rates[f"steady_{part}_{name}"] = (len(paths) - half) / max(whole - first, 1e-9)
    return rates


def image_pipeline(config: dict, device: torch.device, images: int, workers: int) -> dict:
    """benchmarks/gpu's evaluation input pipeline: images/s (`pipeline_rates`: loader threads, and `workers` loader
    processes) of `images` photo-sized JPEGs with a MERU ViT-B/16 image encoder on `device`, as evaluation runs it
    (`hypvl.runtime.devices.on_device`), at the config's eval batch; and whether its features are bitwise."""
    torch.manual_seed(0)
    model = on_device(build_model("meru", "vit_b16", config["model"]).eval(), device)
    size, batch = config["model"]["image_size"], config["eval"]["batch_size"]
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_photos(Path(tmp), images)
        kb = sum(p.stat().st_size for p in paths) / len(paths) / 1024
        rates = pipeline_rates(model, paths, size, batch, workers)
        return {"images": len(paths), "jpeg_kb": kb, "batch": batch, "loader_threads": LOADER_THREADS,
                "loader_processes": workers, **{f"{part}_images_per_s": r for part, r in rates.items()},
                "bitwise": bitwise_features(model, paths[:batch], size)}


def bitwise_features(model, paths: list[Path], size: int) -> dict:
    """Whether the pipeline's features (uint8 pixels made floats on the encoder's device) equal those of pixels made
    floats on the CPU, and whether dividing by the Python number 255 on the device would give the CPU's floats."""
    view = lambda image: resize_center_crop(image, size)  # noqa: E731
    encode, device = device_encoder(model, "encode_image")
    pipeline = encode_images(encode, lambda i: load_image(paths[i]), len(paths), view, len(paths), "bitwise", device)
    on_cpu = to_tensor_batch([view(load_image(path)) for path in paths])
    by_number = on_cpu.mul(255).round().to(torch.uint8).to(device).float().div_(255.0).cpu()
    return {"features": torch.equal(pipeline, model.encode_image(on_cpu)),
            "python_number_division": torch.equal(by_number, on_cpu)}


def random_meru(size: str):
    """(config, MERU with random weights in eval mode, tokenizer) at the `smoke` or `paper` model size."""
    config = load_config(["workflows/config/full.yaml"] if size == "paper" else [])
    torch.manual_seed(0)
    model = build_model("meru", "vit_s16", config["model"]).eval()
    return config, model, Tokenizer(config["model"]["text"]["context_length"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke-root", type=Path, default=None, help="a smoke world (e.g. data/smoke)")
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--captions-per-image", type=int, default=5)
    parser.add_argument("--classes", type=int, default=1000, help="classes of the large classification set")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", choices=["smoke", "paper"], default="smoke",
                        help="encoder sizes of default.yaml (smoke) or full.yaml (paper)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config, model, tokenizer = random_meru(args.model)
    size = config["model"]["image_size"]
    templates = list(load_dataset_info("imagenet").prompts)
    if args.smoke_root is not None:
        eval_root = args.smoke_root / config["eval"]["classification_dir"]
        bench_zero_shot("smoke", model, tokenizer, eval_root / "imagenet", templates, size, args.batch_size,
                        args.repeats)
        bench_retrieval("smoke", model, tokenizer, args.smoke_root / config["eval"]["datasets"]["coco_captions"],
                        size, args.batch_size, args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        captions_json, classes, wds = write_large_set(Path(tmp), args.images, args.captions_per_image, args.classes)
        bench_zero_shot("large", model, tokenizer, classes, templates, size, args.batch_size, args.repeats)
        report("large", "zs wds", *measure_zero_shot(model, tokenizer, wds, templates, size, args.batch_size,
                                                     args.repeats))
        bench_retrieval("large", model, tokenizer, captions_json, size, args.batch_size, args.repeats)


if __name__ == "__main__":
    main()
