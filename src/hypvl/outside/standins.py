"""Smoke-scale stand-ins for weights from outside: a smoke-trained model of the matching method, written in the
source's real on-disk format, so that the import step reads it through the very code path the real file takes.

- released MERU/HyCoCLIP checkpoints: `torch.save({"model": state_dict})` under the reference repositories' key
  names, from our trained model of the same recipe (ours are the reference architecture: nothing changes).
- open_clip (LAION's CLIPs): `open_clip_config.json` and `open_clip_pytorch_model.bin`, converted from a trained
  CLIP of ours: open_clip's ViT without its pre-LayerNorm (`no_ln_pre`), the patch embedding's bias folded into
  the position embedding (open_clip's has none), the projections transposed: the same function.
- transformers (OpenAI's CLIPs, ALIGN): a `save_pretrained` folder of a model of the library's own architecture
  at this scale, trained by our trainer (`standin_model`): transformers' CLIP vision tower normalises before its
  blocks and ALIGN is an EfficientNet and a BERT, so no model of ours converts into them.
"""

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import torch

from hypvl.errors import InputError
from hypvl.io import atomic_directory

from hypvl.models.checkpoints import load_checkpoint, read_checkpoint
from hypvl.models.clip import CLIP
from hypvl.models.library import OPEN_CLIP_CONFIG, TransformersModel, wrap_transformers
from .released import reference_state

OPEN_CLIP_WEIGHTS = "open_clip_pytorch_model.bin"
OPENAI_PIXEL_MEAN = (0.48145466, 0.4578275, 0.40821073)  # CLIPImageProcessor's defaults, as OpenAI's CLIPs use
OPENAI_PIXEL_STD = (0.26862954, 0.26130258, 0.27577711)
WORDPIECE_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
ALIGN_INPUT_SIZE = 289  # kakaobrain/align-base's image processor's crop
WORDPIECE_WORDS = 4000  # whole words of a stand-in BERT vocabulary; rarer words split into characters
# timm ViT block -> open_clip residual attention block, per parameter
TIMM_TO_OPEN_CLIP = (("norm1.", "ln_1."), ("attn.qkv.weight", "attn.in_proj_weight"),
                     ("attn.qkv.bias", "attn.in_proj_bias"), ("attn.proj.", "attn.out_proj."), ("norm2.", "ln_2."),
                     ("mlp.fc1.", "mlp.c_fc."), ("mlp.fc2.", "mlp.c_proj."))


def open_clip_layout(model: CLIP) -> tuple[dict, dict[str, torch.Tensor]]:
    """(open_clip_config.json, open_clip state dict) of the open_clip CLIP that computes what our CLIP `model`
    computes. InputError when `model` is not a plain CLIP (a hyperbolic model has no open_clip counterpart)."""
    if type(model) is not CLIP:
        raise InputError(f"an open_clip stand-in converts a CLIP, not a {type(model).__name__}")
    vit, text = model.visual.vit, model.textual.transformer
    width, embed_dim = vit.embed_dim, model.visual_proj.out_features
    config = {"model_cfg": {
        "embed_dim": embed_dim,
        "vision_cfg": {"image_size": model.image_size, "patch_size": vit.patch_embed.patch_size[0], "width": width,
                       "layers": len(vit.blocks), "head_width": width // vit.blocks[0].attn.num_heads,
                       "mlp_ratio": vit.blocks[0].mlp.fc1.out_features / width, "no_ln_pre": True},
        "text_cfg": {"context_length": model.textual.context_length, "vocab_size": text.vocab_size,
                     "width": text.width, "heads": text.heads, "layers": len(text.transformer.resblocks)}},
        "preprocess_cfg": {"mean": model.pixel_mean.flatten().tolist(), "std": model.pixel_std.flatten().tolist()}}
    ours = {key: value.detach().clone() for key, value in model.state_dict().items()}
    state = {"logit_scale": ours.pop("logit_scale"), "text_projection": ours.pop("textual_proj.weight").T,
             "visual.proj": ours.pop("visual_proj.weight").T,
             "visual.class_embedding": ours.pop("visual.vit.cls_token").flatten(),
             "visual.conv1.weight": ours.pop("visual.vit.patch_embed.proj.weight")}
    position = ours.pop("visual.vit.pos_embed")[0]
    position[1:] += ours.pop("visual.vit.patch_embed.proj.bias")  # conv(x) + b + pos = conv(x) + (pos + b)
    state["visual.positional_embedding"] = position
    for name in ("pixel_mean", "pixel_std"):
        ours.pop(name)
    for key in list(ours):
        if key.startswith("visual.vit.blocks."):
            new = key.removeprefix("visual.vit.blocks.")
            new = next((new.replace(a, b) for a, b in TIMM_TO_OPEN_CLIP if a in new), None)
            if new is not None:
                state[f"visual.transformer.resblocks.{new}"] = ours.pop(key)
        elif key.startswith("visual.vit.norm."):
            state[key.replace("visual.vit.norm.", "visual.ln_post.")] = ours.pop(key)
        elif key.startswith("textual.transformer."):
            state[key.removeprefix("textual.transformer.")] = ours.pop(key)
    if ours:
        raise InputError(f"no open_clip counterpart for the weights {sorted(ours)}")
    return config, state


def _clip_tokenizer(context_length: int):
    """transformers' CLIP tokenizer with the BPE vocabulary and merges open_clip ships (OpenAI's, which the
    Hub's CLIP tokenizers hold), special tokens under transformers' names."""
    from open_clip.tokenizer import SimpleTokenizer
    from transformers import CLIPTokenizer

    bpe = SimpleTokenizer()
    names = {"<start_of_text>": "<|startoftext|>", "<end_of_text>": "<|endoftext|>"}
    vocab = {names.get(token, token): index for token, index in bpe.encoder.items()}
    merges = [pair for pair, _ in sorted(bpe.bpe_ranks.items(), key=lambda item: item[1])]
    return CLIPTokenizer(vocab=vocab, merges=merges, model_max_length=context_length)


def wordpiece_vocabulary(texts: Iterable[str]) -> dict[str, int]:
    """A BERT vocabulary for `texts`: special tokens, every printable ASCII character alone and as a
    continuation (`##c`), then the WORDPIECE_WORDS most frequent words (ties by spelling), split and
    lower-cased as BERT does. Written by hand: tokenizers' WordPiece trainer breaks ties differently in
    every process, and smoke stand-ins must be reproducible."""
    from tokenizers import normalizers, pre_tokenizers

    normalizer, splitter = normalizers.BertNormalizer(lowercase=True), pre_tokenizers.BertPreTokenizer()
    counts = Counter(word for text in texts
                     for word, _ in splitter.pre_tokenize_str(normalizer.normalize_str(text)))
    characters = sorted({chr(code) for code in range(33, 127)} - {chr(code) for code in range(65, 91)})
    tokens = [*WORDPIECE_SPECIALS, *characters, *(f"##{c}" for c in characters)]
    known = set(tokens)
    words = [word for word, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0])) if word not in known]
    return {token: index for index, token in enumerate(tokens + words[:WORDPIECE_WORDS])}


def align_image_processor(size: int = ALIGN_INPUT_SIZE):
    """kakaobrain/align-base's image processor at input size `size` (its own: 289): a bilinear square resize (346
    for 289), a centre crop, pixels to [-1, 1] (its include_top false: no further division by the std, which took
    them to [-2, 2])."""
    from transformers import EfficientNetImageProcessor

    resized = round(size * 346 / 289)
    return EfficientNetImageProcessor(size={"height": resized, "width": resized},
                                      crop_size={"height": size, "width": size}, do_center_crop=True, resample=2,
                                      rescale_factor=1 / 127.5, rescale_offset=True, do_normalize=False,
                                      include_top=False)


def standin_model(architecture: str, model_cfg: dict, backbone: str, texts: Iterable[str] = ()) -> TransformersModel:
    """A freshly initialised transformers model of `architecture` (clip | align) at the size of the scale's
    `model` config (its text tower, the `backbone` ViT's width and depth, the embedding width), with its
    tokenizer and image processor. ALIGN's BERT vocabulary is built from `texts` (the training captions)."""
    from transformers import AlignConfig, AlignModel, BertTokenizer, CLIPConfig, CLIPImageProcessor, CLIPModel

    text, vit = model_cfg["text"], model_cfg["backbones"][backbone]
    size, embed_dim = model_cfg["image_size"], model_cfg["embed_dim"]
    text_tower = {"hidden_size": text["width"], "intermediate_size": 4 * text["width"],
                  "num_hidden_layers": text["layers"], "num_attention_heads": text["heads"],
                  "max_position_embeddings": text["context_length"]}
    if architecture == "clip":
        config = CLIPConfig(
            text_config={**text_tower, "hidden_act": "gelu"}, projection_dim=embed_dim,
            vision_config={"hidden_size": vit["width"], "intermediate_size": 4 * vit["width"],
                           "num_hidden_layers": vit["depth"], "num_attention_heads": vit["heads"],
                           "image_size": size, "patch_size": vit["patch"], "hidden_act": "gelu"})
        processor = CLIPImageProcessor(size={"shortest_edge": size}, crop_size={"height": size, "width": size},
                                       image_mean=list(OPENAI_PIXEL_MEAN), image_std=list(OPENAI_PIXEL_STD))
        return wrap_transformers(CLIPModel(config), _clip_tokenizer(text["context_length"]), processor)
    if architecture == "align":
        vocab = wordpiece_vocabulary(texts)
        # two single-block MBConv stages (ALIGN's EfficientNet-B7 has seven, 2x as wide, 3.1x as deep), the last
        # one's channels the embedding width (ALIGN pools them as its image embedding); CLIP's initial temperature,
        # as our CLIP trains from
        vision = {"image_size": size, "hidden_dim": embed_dim, "kernel_sizes": [3, 3], "in_channels": [32, 24],
                  "out_channels": [24, embed_dim], "strides": [2, 2], "num_block_repeats": [1, 1],
                  "expand_ratios": [1, 4], "depthwise_padding": [], "width_coefficient": 1.0, "depth_coefficient": 1.0}
        config = AlignConfig(text_config={**text_tower, "vocab_size": len(vocab)}, vision_config=vision,
                             projection_dim=embed_dim, temperature_init_value=0.07)
        tokenizer = BertTokenizer(vocab=vocab, model_max_length=text["context_length"])
        return wrap_transformers(AlignModel(config), tokenizer, align_image_processor(size))
    raise InputError(f"no stand-in for architecture {architecture!r} (known: clip, align)")


def write_released(checkpoint: Path, out: Path, file_name: str) -> None:
    """`out`/`file_name`: the model of our `checkpoint` as MERU and HyCoCLIP release theirs."""
    state = read_checkpoint(checkpoint)["model"]
    context = state["textual.transformer.positional_embedding"].shape[0]
    with atomic_directory(out) as folder:
        torch.save({"model": reference_state(state, context)}, folder / file_name)


def write_open_clip(checkpoint: Path, out: Path) -> None:
    """`out`: our CLIP of `checkpoint` as an open_clip model folder (what `hf-hub:laion/...` serves)."""
    model, _ = load_checkpoint(checkpoint)
    try:
        config, state = open_clip_layout(model)
    except InputError as exc:
        raise InputError(f"{checkpoint}: {exc}") from None
    with atomic_directory(out) as folder:
        (folder / OPEN_CLIP_CONFIG).write_text(json.dumps(config, indent=1, allow_nan=False), encoding="utf-8")
        torch.save(state, folder / OPEN_CLIP_WEIGHTS)


def write_transformers(checkpoint: Path, out: Path) -> None:
    """`out`: the transformers model of `checkpoint` (a trained stand-in) in `save_pretrained` layout."""
    model, _ = load_checkpoint(checkpoint)
    if not isinstance(model, TransformersModel):
        raise InputError(f"{checkpoint}: a transformers stand-in is written from a transformers model, not a "
                         f"{type(model).__name__}")
    with atomic_directory(out) as folder:
        model.save_pretrained(folder)


WRITERS = {"open_clip": write_open_clip, "transformers": write_transformers}
