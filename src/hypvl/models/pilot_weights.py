"""Full-size stand-ins for weights from outside, served by the pilot world's mirror (hypvl.data.pilot): randomly
initialised models at the papers' sizes in the release layouts the import and grounding steps read.

- a released MERU/HyCoCLIP checkpoint: `torch.save({"model": state_dict})` under the reference code's names, from a
  model of the method and backbone at the config's `model` sizes (paper scale's);
- the grounding detector: an OWLv2 at `google/owlv2-base-patch16-ensemble`'s sizes (ViT-B/16 at 960 px, a 12-layer
  512-wide text tower over 16 tokens, CLIP's byte-pair vocabulary) in `save_pretrained` layout, as a Hub snapshot.

`hypvl pilot-weights` writes one outside source's files into the mirror at the URL (or Hub repository) its manifest
entry names, so that `hypvl acquire` fetches them as it would the real ones.
"""

import logging
from pathlib import Path

from hypvl.config import add_config_arguments, config_from_args
from hypvl.data.manifest import load_sources
from hypvl.data.mirror import Mirror
from hypvl.errors import InputError
from hypvl.io import atomic_write, write_json

from .sources import WEIGHTS_MANIFEST

log = logging.getLogger(__name__)
# a random box head proposes each patch's anchor box, 1/60 of the side at 960 px; the stand-in's proposes ~0.4 of it:
# logit(0.4) - logit(1/60), so that the paper's 32-pixel filter keeps boxes in the pilot's 256-pixel pictures
BOX_SIZE_SHIFT = 3.67
# google/owlv2-base-patch16-ensemble's towers (its config.json: vision ViT-B/16 at 960 px; CLIP's text tower)
OWLV2_BASE = {"text": {"hidden_size": 512, "intermediate_size": 2048, "num_hidden_layers": 12,
                       "num_attention_heads": 8, "max_position_embeddings": 16},
              "vision": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                         "num_attention_heads": 12, "image_size": 960, "patch_size": 16},
              "projection_dim": 512}


def write_released(path: Path, method: str, backbone: str, model_cfg: dict, seed: int) -> None:
    """A randomly initialised `method` model on `backbone` saved at `path` as MERU and HyCoCLIP release theirs."""
    import torch

    from .build import build_model
    from .released import reference_state

    torch.manual_seed(seed)
    model = build_model(method, backbone, model_cfg)
    state = reference_state(model.state_dict(), model_cfg["text"]["context_length"])
    with atomic_write(path, mode="wb") as handle:
        torch.save({"model": state}, handle)


def write_detector(folder: Path, seed: int) -> None:
    """A randomly initialised OWLv2 of the released base model's sizes and its processor, saved into `folder`."""
    import torch

    from hypvl.grounding.detector import random_owlv2

    from .standins import _clip_tokenizer

    sizes = OWLV2_BASE
    model, processor = random_owlv2(sizes["text"], sizes["vision"], sizes["projection_dim"],
                                    _clip_tokenizer(sizes["text"]["max_position_embeddings"]), seed)
    with torch.no_grad():  # boxes of ~40% of the side, not one 16-pixel patch of 960 (which the 32-pixel filter drops)
        model.box_head.dense2.bias[2:] += BOX_SIZE_SHIFT
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)


def _pilot_weights(args) -> None:
    from hypvl.spec import load_spec

    config = config_from_args(args)
    mirror = Mirror.at(config["fetch"]["mirror"])
    if mirror is None or config.get("pilot_world") is None:
        raise InputError("config: pilot weights need `pilot_world` and `fetch.mirror` (workflows/config/pilot.yaml)")
    seed = config["pilot_world"].get("seed", 0)
    if args.detector:
        commit = "0" * 32 + "00000001"  # the stand-in's made-up commit, which the mirror's `main` names
        write_detector(mirror.hub_snapshot(args.detector, "model", commit, "main"), seed)
        served = {"detector": args.detector}
    else:
        declared = load_spec(args.spec).experiments.get(args.experiment)
        if declared is None:
            raise InputError(f"{args.spec}: no experiment {args.experiment!r}")
        entry = load_sources(args.sources or WEIGHTS_MANIFEST).get(declared.source, {})
        if "files" not in entry or len(entry["files"]) != 1:
            raise InputError(f"{declared.source}: the pilot stands in for released checkpoints (one file) only")
        url = entry["files"][0]["url"]
        write_released(mirror.path(url), declared.method, declared.backbone, config["model"], seed)
        served = {"source": declared.source, "url": url}
    write_json(Path(args.out), served, indent=1)
    log.info("pilot weights: %s", served)


def add_commands(subparsers) -> None:
    """Register `pilot-weights`."""
    parser = subparsers.add_parser("pilot-weights", help="serve a full-size stand-in of weights from outside in the "
                                                         "pilot's mirror")
    add_config_arguments(parser)
    parser.add_argument("--spec", help="replication/<paper>.yaml declaring --experiment")
    parser.add_argument("--experiment", help="an experiment whose source is a released checkpoint")
    parser.add_argument("--sources", help="the weights manifest naming the source's URL (default: the package's)")
    parser.add_argument("--detector", help="instead: the grounding detector's Hub id")
    parser.add_argument("--out", required=True, help="a JSON saying what was served, written once it is")
    parser.set_defaults(func=_pilot_weights)
