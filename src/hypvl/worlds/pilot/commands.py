"""`hypvl pilot-world`: write the pilot world (config `pilot_world`) into the mirror of config `fetch.mirror`, and
what a human's manual and prepare steps leave into the dataset folders of config `acquire`; then the pilot's data
manifest (config `fetch.sources`)."""

import logging
import time
from pathlib import Path

from hypvl.config import add_config_arguments, config_from_args
from hypvl.errors import InputError
from hypvl.io import write_json

log = logging.getLogger(__name__)
MARKER = "pilot_world.json"  # in the mirror, once the world is complete


def write_pilot_world(config: dict) -> dict:
    """Write the pilot world of `config`; returns its summary (also written to <mirror>/pilot_world.json). The world
    is written aside and moved into data_dir and the mirror once whole, over no file the suite did not write
    (`install`); the linear-probe sources replace only folders of sources written before (`atomic_directory`)."""
    from hypvl.acquire.manifest import load_sources
    from hypvl.acquire.mirror import Mirror

    from . import classification, corpora, evalsets, probe_sources
    from .install import install, staging
    from .manifest import write_manifest
    from .world import PilotSettings, PilotWorld

    if config.get("pilot_world") is None or not config["fetch"]["mirror"] or not config["fetch"]["sources"]:
        raise InputError("config: the pilot world needs `pilot_world`, `fetch.mirror` and `fetch.sources` "
                         "(workflows/config/pilot.yaml sets them)")
    data_dir, root = Path(config["data_dir"]), Path(config["fetch"]["mirror"])
    sources = Path(config["fetch"]["sources"])
    start = time.perf_counter()
    with staging(data_dir) as stage:
        world = PilotWorld(PilotSettings(**config["pilot_world"]), stage / "data", Mirror(stage / "mirror"),
                           config["acquire"], load_sources())

        def placed(paths) -> list[str]:  # where the staged files will lie
            return [str(data_dir / Path(path).relative_to(stage / "data")) for path in paths]

        written = {"classification": classification.write_classification_sets(world,
                                                                               config["eval"]["classification_split"]),
                   "probe_sources": probe_sources.write_probe_sources(world.settings, data_dir / config["eval"]
                                                                      ["probe_source_dir"]),
                   "grit": placed(corpora.write_grit(world)), "redcaps": placed(corpora.write_redcaps(world)),
                   "cc3m": placed(corpora.write_cc3m(world)), "yfcc15m": placed(corpora.write_yfcc15m(world)),
                   "evaluation": evalsets.write_evaluation_sets(world)}
        write_manifest(stage / "sources" / sources.name, world.sources, world.served)
        summary = {"settings": world.settings.as_dict(), "written": written, "served": sorted(world.served),
                   "seconds": round(time.perf_counter() - start, 1)}
        write_json(stage / "mirror" / MARKER, summary, indent=1)  # moved last: the workflow's output
        install([(stage / "data", data_dir), (stage / "sources", sources.parent), (stage / "mirror", root)], MARKER)
    return summary


def _pilot_world(args) -> None:
    summary = write_pilot_world(config_from_args(args))
    log.info("pilot world: %d classification sets, corpora grit, redcaps, cc3m and yfcc15m, evaluation sets %s, "
             "%d files served (%.1f s)", len(summary["written"]["classification"]),
             ", ".join(summary["written"]["evaluation"]), len(summary["served"]), summary["seconds"])


def add_commands(subparsers) -> None:
    """Register `pilot-world`."""
    parser = subparsers.add_parser("pilot-world", help="write the pilot world: a local mirror of the downloads and "
                                                       "what the manual and prepare steps leave")
    add_config_arguments(parser)
    parser.set_defaults(func=_pilot_world)
