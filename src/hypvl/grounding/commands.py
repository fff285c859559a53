"""`hypvl ground`: a raw training corpus -> HyCoCLIP's grounded shards (HyCoCLIP App. A).

Reads a raw corpus (GRIT, RedCaps or CC3M webdataset shards, or a YFCC15M folder), finds noun chunks and referring
expressions with spaCy, boxes them, applies the paper's filters, crops the kept boxes to squares and writes every
readable pair, with its boxes or none (one corpus layout for every model: the training mode picks its pairs), into
grounded shards (`hypvl.data.formats.grounded`) with each caption's dependency parse, plus a
`grounding.json` summary (counts, settings, shards, seconds) beside them. The grounded folder is written whole beside
its old self and swapped in once complete (`hypvl.io.atomic_directory`): a failed grounding leaves the previous one
as it was, and a folder holding anything the step did not write (the raw corpus itself, where `corpora` names the raw
folder) is never replaced. It is written a shard at a time, and a grounding stopped part way continues after its
last shard when started again (`hypvl.grounding.resume`).

Box sources: GRIT ships its boxes (`noun_chunks`, `ref_exps`), and HyCoCLIP's `prepare_GRIT_webdataset.py` takes
them as they are (each distinct span text once, area > 32x32 px, no score threshold), so a GRIT corpus is always
grounded from its own spans (`SpanBoxes`). RedCaps, CC3M and YFCC15M carry none: config `grounding.detector` is
`oracle` (the smoke world's boxes, from the raw folder's `oracle_regions.jsonl`) or a transformers model id (OWLv2 /
OWL-ViT) run on every phrase. `grounding.raw.<corpus>.keep_boxless: false` writes only the samples with a box (GRIT
and CC3M, as HyCoCLIP's code writes them).
"""

import logging
import time
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

from hypvl.config import add_config_arguments, config_from_args, positive_int
from hypvl.data.formats.decoded import write_twin
from hypvl.data.formats.grounded import GroundedRecord, write_grounded_shards
from hypvl.acquire.mirror import Mirror
from hypvl.errors import InputError
from hypvl.grounding.filters import BoxFilter
from hypvl.grounding.pipeline import NoBoxes, OracleBoxes, SpanBoxes, ground
from hypvl.grounding.raw import RawPosition, raw_records
from hypvl.grounding.resume import PROGRESS, Progress, raw_files, resumable, staged, staging_folder
from hypvl.grounding.threshold import box_threshold
from hypvl.io import check_replaceable, check_writable, write_json

log = logging.getLogger(__name__)
SUMMARY = "grounding.json"


def grounded_records(samples, source: str) -> Iterator[GroundedRecord]:
    """`ground` samples as grounded-shard records: the raw image bytes as they were, JPEG box crops
    with their phrases, the parse, and the captions drawn from where there are several."""
    for sample in samples:
        boxes = [(crop, box["phrase"]) for crop, box in zip(sample["crops"], sample["boxes"])]
        captions = sample.get("captions", [])
        yield GroundedRecord(sample["key"], sample["image_bytes"], sample["caption"], boxes, source, sample["parse"],
                             sample.get("subreddit"), captions if len(captions) > 1 else [])


def box_source_for(fmt: str, detector: str, device: str = "cpu", revision: str | None = None,
                   hub_cache: Path | None = None, precision: str = "fp32"):
    """SpanBoxes for GRIT (its own spans), OracleBoxes for `detector: oracle`; else the transformers detector (at
    `revision`; from the Hub cache `hub_cache` alone where given, e.g. a mirror's; computing in `precision`)."""
    if fmt == "grit":
        return SpanBoxes()
    if detector == "oracle":
        return OracleBoxes()
    from hypvl.grounding.detector import PhraseGroundingDetector

    return PhraseGroundingDetector.from_pretrained(detector, device, revision=revision, hub_cache=hub_cache,
                                                   precision=precision)


def ground_corpus(raw_folder: Path, fmt: str, out_folder: Path, prefix: str, extractor, box_source,
                  box_filter: BoxFilter, crop_size: int, batch_size: int, shard_size: int, oracle: bool,
                  decoded_twins: bool = False, max_skipped_fraction: float = 1.0, resume: dict | None = None,
                  shard_done=None, threads: int = 1, keep_boxless: bool = True) -> dict:
    """Ground one raw corpus into `<prefix>-NNNNNN.tar` shards under `out_folder`, a folder of its own (with
    `decoded_twins`, each shard's decoded twin beside it), a shard at a time; returns the counts (see `ground`, plus
    the skipped samples of `raw_records`) and the shard paths. `resume` (the state an earlier attempt passed to
    `shard_done`) continues after its last shard; `shard_done(state)` is called after each shard with the state to
    continue from: the raw position (`read`, `listed`), the counts and the shards' names. `threads` decode the images
    and cut and encode the crops (see `raw_records` and `ground`); without `keep_boxless`, only the samples with a
    box are written."""
    state = resume or {"read": 0, "listed": 0, "counts": {}, "shards": []}
    counts, position = dict(state["counts"]), RawPosition(state["read"], state["listed"])
    records = raw_records(fmt, Path(raw_folder), oracle, counts, max_skipped_fraction, position, threads)
    shards = [Path(out_folder) / name for name in state["shards"]]
    while True:  # a shard's samples are grounded apart from the next's: a shard is a point to continue from
        grounded_before = counts.get("samples_in", 0)
        samples = ground(islice(records, shard_size), extractor, box_source, box_filter, crop_size, batch_size, counts,
                         threads, keep_boxless)
        written = write_grounded_shards(grounded_records(samples, prefix), Path(out_folder), shard_size, prefix,
                                        first=len(shards))
        if counts["samples_in"] == grounded_before:  # the raw corpus is read (a slice may write nothing, all dropped)
            return {"counts": counts, "shards": shards}
        for shard in written if decoded_twins else []:
            write_twin(shard)
        shards += written
        if shard_done is not None:
            shard_done({"read": position.read, "listed": position.listed, "counts": dict(counts),
                        "shards": [shard.name for shard in shards]})


def _check_apart(raw: Path, out: Path, corpus: str) -> None:
    """InputError when the grounded folder is the raw corpus's folder, or one holds the other: grounding replaces
    its folder whole, and would replace its own input."""
    raw, out = raw.resolve(), out.resolve()
    if raw == out or out in raw.parents or raw in out.parents:
        raise InputError(f"config: corpora.{corpus} ({out}) and grounding.raw.{corpus}.path ({raw}) must be separate "
                         "folders: grounding writes its folder whole and would replace its own input")


def _ground(args) -> None:
    from hypvl.runtime.devices import select_device, use_threads
    from hypvl.grounding.phrases import PhraseExtractor

    config = config_from_args(args)
    threads = use_threads(args.threads)
    settings = config["grounding"]
    if args.corpus not in settings["raw"] or args.corpus not in config["corpora"]:
        raise InputError(f"config: corpus {args.corpus!r} needs grounding.raw.{args.corpus} and corpora.{args.corpus}")
    data_dir = Path(config["data_dir"])
    raw, out = settings["raw"][args.corpus], data_dir / config["corpora"][args.corpus]
    _check_apart(data_dir / raw["path"], out, args.corpus)
    keep_boxless = raw.get("keep_boxless", True)
    if args.no_boxes and not keep_boxless:
        raise InputError(f"config: grounding.raw.{args.corpus}.keep_boxless is false, so grounding without boxes "
                         "(--no-boxes) would write no sample")
    check_replaceable(out)  # before the models load
    check_writable(out.parent)
    start = time.perf_counter()
    extractor = PhraseExtractor(config["spacy_model"])
    mirror = Mirror.at(config["fetch"]["mirror"])
    device = select_device(args.device or settings["device"]).type
    detector = "none" if args.no_boxes else settings["detector"]
    box_source = NoBoxes() if args.no_boxes else box_source_for(
        raw["format"], detector, device, settings.get("detector_revision"), None if mirror is None else mirror.hub,
        settings["precision"])
    loaded = time.perf_counter()
    threshold, threshold_from = box_threshold(config, args.corpus, box_source, boxes=not args.no_boxes)
    box_filter = BoxFilter(settings["min_box_side"], threshold)
    shard_size = args.shard_size or settings["shard_size"]
    recipe = {"corpus": args.corpus, "raw": raw, "detector": detector,
              "detector_commit": getattr(box_source, "commit", None),
              "detector_precision": getattr(box_source, "precision", None), "spacy_model": config["spacy_model"],
              **{key: settings[key] for key in ("min_box_side", "crop_size", "batch_size", "decoded_twins",
                                                "max_skipped_fraction")}, "box_threshold": threshold,
              "shard_size": shard_size, "raw_files": raw_files(data_dir / raw["path"])}
    staging = staging_folder(out)
    resume = resumable(staging, recipe, args.corpus)
    if resume is not None:
        log.info("%s: continuing after shard %d (%d raw samples read) of an earlier grounding", args.corpus,
                 len(resume["shards"]), resume["listed"])
    before = resume["seconds"] if resume else 0.0
    progress = Progress(staging, recipe, args.corpus, before, resume["counts"]["samples_in"] if resume else 0)
    with staged(out, staging, args.corpus) as folder:  # the previous grounding stays until this one is whole
        result = ground_corpus(data_dir / raw["path"], raw["format"], folder, args.corpus, extractor, box_source,
                               box_filter, settings["crop_size"], settings["batch_size"], shard_size,
                               oracle=detector == "oracle", decoded_twins=settings["decoded_twins"],
                               max_skipped_fraction=settings["max_skipped_fraction"], resume=resume,
                               shard_done=progress.shard_done, threads=threads, keep_boxless=keep_boxless)
        counts = result["counts"]
        if not counts["samples_grounded"] and not args.no_boxes:
            raise InputError(f"{data_dir / raw['path']}: grounding kept a box in none of its {counts['samples_in']} "
                             f"samples ({', '.join(f'{k} {v}' for k, v in counts.items() if v)}): nothing for "
                             "HyCoCLIP to train on, and a box source that finds nothing is broken")
        # captions per second once the models were loaded, in this attempt
        rate = (counts["samples_in"] - progress.done_before) / max(time.perf_counter() - loaded, 1e-9)
        seconds = before + time.perf_counter() - start
        summary = {"corpus": args.corpus, "format": raw["format"], "raw": raw["path"],
                   "box_source": "grit spans" if raw["format"] == "grit" and not args.no_boxes else detector,
                   "detector_commit": recipe["detector_commit"], "detector_precision": recipe["detector_precision"],
                   "spacy_model": config["spacy_model"], "filters": {"min_box_side": settings["min_box_side"],
                                                                      "box_threshold": threshold},
                   "box_threshold_from": threshold_from,
                   "crop_size": settings["crop_size"], "max_skipped_fraction": settings["max_skipped_fraction"],
                   "counts": counts,
                   "shards": [str((out / p.name).relative_to(data_dir)) for p in result["shards"]],
                   "resumed_at_shard": len(resume["shards"]) if resume else None,
                   "seconds": round(seconds, 2), "captions_per_second": round(rate, 1)}
        (folder / PROGRESS).unlink(missing_ok=True)
        write_json(folder / SUMMARY, summary, indent=1)
    log.info("%s: %d samples written, %d of them with %d boxes, in %.1f s (%s captions/s)", args.corpus,
             counts["samples_out"], counts["samples_grounded"], counts["boxes_kept"], seconds,
             summary["captions_per_second"])


def add_commands(subparsers) -> None:
    """Register `ground`."""
    parser = subparsers.add_parser("ground", help="ground a raw training corpus into grounded shards")
    add_config_arguments(parser)
    parser.add_argument("--corpus", required=True, help="corpus name (a key of config grounding.raw and corpora)")
    parser.add_argument("--shard-size", type=positive_int, default=None,
                        help="samples per grounded shard (default: config grounding.shard_size)")
    parser.add_argument("--device", default=None, help="detector device (default: config grounding.device)")
    parser.add_argument("--threads", type=positive_int, default=1,
                        help="CPU threads: torch's, those decoding the images and those cutting and encoding the box "
                             "crops (the workflow passes the job's)")
    parser.add_argument("--no-boxes", action="store_true",
                        help="write every pair without boxes, running no detector (a corpus no experiment reads "
                             "boxes of; the workflow decides)")
    parser.set_defaults(func=_ground)
