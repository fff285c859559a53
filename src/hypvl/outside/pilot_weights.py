"""Full-size stand-ins for weights from outside, served by the pilot world's mirror (hypvl.worlds.pilot): randomly
initialised models at the papers' sizes in the release layouts the import and grounding steps read.

- a released MERU/HyCoCLIP checkpoint: `torch.save({"model": state_dict})` under the reference code's names, from a
  model of the method and backbone at the config's `model` sizes (paper scale's);
- the grounding detector: an OWLv2 at `google/owlv2-base-patch16-ensemble`'s sizes (ViT-B/16 at 960 px, a 12-layer
  512-wide text tower over 16 tokens, CLIP's byte-pair vocabulary) in `save_pretrained` layout, as a Hub snapshot;
- a public dual encoder (HierarCaps' pretrained:<hub id>) as the Hub serves it for the library loading it: for
  transformers a `save_pretrained` folder (model, tokenizer, image processor) of the released architecture; for
  open_clip `open_clip_config.json` (open_clip's own model config and OpenAI's pixel statistics) and
  `open_clip_pytorch_model.bin`.

`hypvl pilot-weights` writes one outside source's files into the mirror at the URL (or Hub repository) its manifest
entry names, so that `hypvl acquire` fetches them as it would the real ones.
"""

import logging
from pathlib import Path

from hypvl.config import add_config_arguments, config_from_args
from hypvl.acquire.manifest import load_sources, pinned
from hypvl.acquire.mirror import Mirror
from hypvl.errors import InputError
from hypvl.io import atomic_write, write_json

from .sources import WEIGHTS_MANIFEST, outside_weights

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
PILOT_COMMIT = "0" * 32 + "00000001"  # a Hub stand-in's made-up commit, which the mirror's `main` names
# the public dual encoders' released sizes: transformers' CLIPConfig and AlignConfig defaults are those of
# openai/clip-vit-base-patch32 and kakaobrain/align-base (their docstrings); the others' from their config.json
CLIP_TOWERS = {
    "B-32": {},
    "L-14": {"text_config": {"hidden_size": 768, "intermediate_size": 3072, "num_attention_heads": 12},
             "vision_config": {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
                               "num_attention_heads": 16, "patch_size": 14},
             "projection_dim": 768},
    "H-14": {"text_config": {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
                             "num_attention_heads": 16, "hidden_act": "gelu"},
             "vision_config": {"hidden_size": 1280, "intermediate_size": 5120, "num_hidden_layers": 32,
                               "num_attention_heads": 16, "patch_size": 14, "hidden_act": "gelu"},
             "projection_dim": 1024},
}
TRANSFORMERS_SIZES = {"openai/clip-vit-base-patch32": CLIP_TOWERS["B-32"],
                      "openai/clip-vit-large-patch14": CLIP_TOWERS["L-14"],
                      "laion/CLIP-ViT-B-32-laion2B-s34B-b79K": {
                          key: {"hidden_act": "gelu"} for key in ("text_config", "vision_config")},
                      "laion/CLIP-ViT-H-14-laion2B-s32B-b79K": CLIP_TOWERS["H-14"],
                      "kakaobrain/align-base": {}}
OPEN_CLIP_NAMES = {"laion/CLIP-ViT-B-32-laion2B-s34B-b79K": "ViT-B-32",
                   "laion/CLIP-ViT-H-14-laion2B-s32B-b79K": "ViT-H-14"}  # open_clip's model configs
BERT_VOCABULARY = 30522  # bert-base-uncased's, ALIGN's text tower


def write_released(path: Path, method: str, backbone: str, model_cfg: dict, seed: int) -> None:
    """A randomly initialised `method` model on `backbone` saved at `path` as MERU and HyCoCLIP release theirs."""
    import torch

    from hypvl.models.build import build_model
    from .released import reference_state

    torch.manual_seed(seed)
    model = build_model(method, backbone, model_cfg)
    state = reference_state(model.state_dict(), model_cfg["text"]["context_length"])
    with atomic_write(path, mode="wb") as handle:
        torch.save({"model": state}, handle)


def released_owlv2(seed: int):
    """A randomly initialised OWLv2 of the released base model's sizes and its processor."""
    import torch

    from hypvl.grounding.detector import random_owlv2

    from .standins import _clip_tokenizer

    sizes = OWLV2_BASE
    model, processor = random_owlv2(sizes["text"], sizes["vision"], sizes["projection_dim"],
                                    _clip_tokenizer(sizes["text"]["max_position_embeddings"]), seed)
    with torch.no_grad():  # boxes of ~40% of the side, not one 16-pixel patch of 960 (which the 32-pixel filter drops)
        model.box_head.dense2.bias[2:] += BOX_SIZE_SHIFT
    return model, processor


def write_detector(folder: Path, seed: int) -> None:
    """`released_owlv2(seed)`, saved into `folder` as a Hub snapshot holds it."""
    model, processor = released_owlv2(seed)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)


def write_transformers(folder: Path, hub_id: str, architecture: str, seed: int) -> None:
    """A randomly initialised transformers `architecture` (clip | align) of `hub_id`'s released sizes, its tokenizer
    (CLIP's byte-pair vocabulary; for ALIGN a WordPiece vocabulary of BERT's size, made up) and image processor,
    saved into `folder`."""
    import torch
    from transformers import AlignConfig, AlignModel, BertTokenizer, CLIPConfig, CLIPImageProcessor, CLIPModel

    from .standins import OPENAI_PIXEL_MEAN, OPENAI_PIXEL_STD, _clip_tokenizer, align_image_processor, \
        wordpiece_vocabulary

    if hub_id not in TRANSFORMERS_SIZES:
        raise InputError(f"{hub_id}: the pilot knows no released sizes for it (it knows {sorted(TRANSFORMERS_SIZES)})")
    torch.manual_seed(seed)
    if architecture == "clip":
        config = CLIPConfig(**TRANSFORMERS_SIZES[hub_id])
        model, size = CLIPModel(config), config.vision_config.image_size
        tokenizer = _clip_tokenizer(config.text_config.max_position_embeddings)
        processor = CLIPImageProcessor(size={"shortest_edge": size}, crop_size={"height": size, "width": size},
                                       image_mean=list(OPENAI_PIXEL_MEAN), image_std=list(OPENAI_PIXEL_STD))
    else:
        config = AlignConfig(**TRANSFORMERS_SIZES[hub_id])
        model = AlignModel(config)
        vocab = wordpiece_vocabulary(())
        vocab |= {f"[unused{i}]": len(vocab) + i for i in range(BERT_VOCABULARY - len(vocab))}
        tokenizer = BertTokenizer(vocab=vocab, model_max_length=config.text_config.max_position_embeddings)
        processor = align_image_processor()  # the released one: its crop, not AlignVisionConfig's 600, sets the size
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    processor.save_pretrained(folder)


def write_open_clip(folder: Path, hub_id: str, seed: int) -> None:
    """A randomly initialised open_clip model of `hub_id`'s architecture (open_clip's own config of it) saved into
    `folder` as the Hub serves LAION's releases."""
    import json

    import open_clip
    import torch

    from hypvl.models.library import OPEN_CLIP_CONFIG
    from .standins import OPEN_CLIP_WEIGHTS, OPENAI_PIXEL_MEAN, OPENAI_PIXEL_STD

    if hub_id not in OPEN_CLIP_NAMES:
        raise InputError(f"{hub_id}: the pilot knows no open_clip model for it (it knows {sorted(OPEN_CLIP_NAMES)})")
    torch.manual_seed(seed)
    name = OPEN_CLIP_NAMES[hub_id]
    model = open_clip.create_model(name)
    config = {"model_cfg": open_clip.get_model_config(name),
              "preprocess_cfg": {"mean": list(OPENAI_PIXEL_MEAN), "std": list(OPENAI_PIXEL_STD)}}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / OPEN_CLIP_CONFIG).write_text(json.dumps(config, indent=1), encoding="utf-8")
    with atomic_write(folder / OPEN_CLIP_WEIGHTS, mode="wb") as handle:
        torch.save(model.state_dict(), handle)


def _pilot_weights(args) -> None:
    from hypvl.spec.load import load_spec

    config = config_from_args(args)
    mirror = Mirror.at(config["fetch"]["mirror"])
    if mirror is None or config.get("pilot_world") is None:
        raise InputError("config: pilot weights need `pilot_world` and `fetch.mirror` (workflows/config/pilot.yaml)")
    seed = config["pilot_world"].get("seed", 0)
    if args.detector:
        write_detector(mirror.hub_snapshot(args.detector, "model", PILOT_COMMIT, "main"), seed)
        served = {"detector": args.detector}
    else:
        declared = load_spec(args.spec).experiments.get(args.experiment)
        if declared is None:
            raise InputError(f"{args.spec}: no experiment {args.experiment!r}")
        manifest = Path(args.sources or WEIGHTS_MANIFEST)
        outside = outside_weights(declared.source, config["weights"]["library"], manifest)
        entry = load_sources(manifest)[outside.entry]
        if outside.library is None:
            url = entry["files"][0]["url"]
            write_released(mirror.path(url), declared.method, declared.backbone, config["model"], seed)
            served = {"source": declared.source, "url": url}
        else:
            repo, revision = entry["hf_snapshot"]["repo"], entry["hf_snapshot"]["revision"]
            folder = (mirror.hub_snapshot(repo, "model", revision) if pinned(revision)
                      else mirror.hub_snapshot(repo, "model", PILOT_COMMIT, revision))
            if outside.library == "open_clip":
                write_open_clip(folder, repo, seed)
            else:
                write_transformers(folder, repo, outside.architecture, seed)
            served = {"source": declared.source, "hub": repo, "library": outside.library}
    write_json(Path(args.out), served, indent=1)
    log.info("pilot weights: %s", served)


def add_commands(subparsers) -> None:
    """Register `pilot-weights`."""
    parser = subparsers.add_parser("pilot-weights", help="serve a full-size stand-in of weights from outside in the "
                                                         "pilot's mirror")
    add_config_arguments(parser)
    parser.add_argument("--spec", help="replication/<paper>.yaml declaring --experiment")
    parser.add_argument("--experiment", help="an experiment whose source is weights from outside")
    parser.add_argument("--sources", help="the weights manifest naming the source's URL (default: the package's)")
    parser.add_argument("--detector", help="instead: the grounding detector's Hub id")
    parser.add_argument("--out", required=True, help="a JSON saying what was served, written once it is")
    parser.set_defaults(func=_pilot_weights)
