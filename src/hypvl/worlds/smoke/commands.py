"""`hypvl synthesize`: write the smoke world (raw training corpora and every evaluation set)."""

import logging
import time
from pathlib import Path

from hypvl.config import add_config_arguments, config_from_args

log = logging.getLogger(__name__)
EVALUATION = "evaluation"  # the part of the world holding every evaluation set (and manifest.json)


def _synthesize(args) -> None:
    from hypvl.errors import InputError

    from .build import WorldSettings, write_evaluation_world, write_raw_corpus

    config = config_from_args(args)
    settings, out = WorldSettings(**config["smoke_world"]), Path(args.out)
    raw = {corpus: entry["path"] for corpus, entry in config["grounding"]["raw"].items()}
    parts = args.only or [*raw, EVALUATION]
    unknown = sorted(set(parts) - {*raw, EVALUATION})
    if unknown:
        raise InputError(f"--only {unknown}: parts are the corpora of grounding.raw ({sorted(raw)}) and {EVALUATION!r}")
    for part in parts:
        start = time.perf_counter()
        if part == EVALUATION:
            manifest = write_evaluation_world(settings, out, config["eval"]["datasets"],
                                              config["eval"]["classification_dir"], config["eval"]["probe_source_dir"])
            log.info("smoke world in %s: %d classification sets, eval sets %s (%.1f s)", out,
                     len(manifest["classification"]), sorted(manifest["eval"]), time.perf_counter() - start)
        else:
            summary = write_raw_corpus(settings, out, part, raw[part])
            log.info("smoke world in %s: corpus %s, %d samples in %d shards (%.1f s)", out / raw[part], part,
                     summary["samples"], len(summary["shards"]), time.perf_counter() - start)


def add_commands(subparsers) -> None:
    """Register `synthesize`."""
    synth = subparsers.add_parser("synthesize", help="write the smoke world (training corpora, eval sets)")
    add_config_arguments(synth)
    synth.add_argument("--out", required=True, help="data/smoke")
    synth.add_argument("--only", nargs="+", default=None, metavar="PART",
                       help=f"write only these parts: raw corpora (grit, redcaps, cc3m) and/or {EVALUATION!r} "
                            "(default: all)")
    synth.set_defaults(func=_synthesize)
