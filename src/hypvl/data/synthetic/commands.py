"""`hypvl synthesize`: write the smoke world (raw training corpora and every evaluation set)."""

import logging
import time
from pathlib import Path

from hypvl.config import add_config_arguments, config_from_args

log = logging.getLogger(__name__)


def _synthesize(args) -> None:
    from .build import WorldSettings, build_world

    config = config_from_args(args)
    start = time.perf_counter()
    raw = {corpus: entry["path"] for corpus, entry in config["grounding"]["raw"].items()}
    manifest = build_world(WorldSettings(**config["smoke_world"]), Path(args.out), raw, config["eval"]["datasets"],
                           config["eval"]["classification_dir"])
    log.info("smoke world in %s: corpora %s, %d classification sets, eval sets %s (%.1f s)", args.out,
             sorted(manifest["corpora"]), len(manifest["classification"]), sorted(manifest["eval"]),
             time.perf_counter() - start)


def add_commands(subparsers) -> None:
    """Register `synthesize`."""
    synth = subparsers.add_parser("synthesize", help="write the smoke world (training corpora, eval sets)")
    add_config_arguments(synth)
    synth.add_argument("--out", required=True, help="data/smoke")
    synth.set_defaults(func=_synthesize)
