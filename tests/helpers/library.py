"""Public dual encoders (open_clip, transformers) written in their libraries' on-disk layouts."""

import json

import torch
from open_clip.model import CLIP as OpenCLIP
from open_clip.tokenizer import bytes_to_unicode
from transformers import (
    AlignConfig,
    AlignModel,
    BertTokenizer,
    CLIPConfig,
    CLIPImageProcessor,
    CLIPModel,
    CLIPTokenizer,
    EfficientNetImageProcessor,
)
from transformers.utils.logging import disable_progress_bar


OPEN_CLIP_CFG = {"model_cfg": {"embed_dim": 16,
                               "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16,
                                              "patch_size": 8},
                               "text_cfg": {"context_length": 12, "vocab_size": 49408, "width": 32, "heads": 2,
                                            "layers": 1}},
                 "preprocess_cfg": {"mean": [0.4, 0.5, 0.6], "std": [0.2, 0.3, 0.25]}}


TEXT_TOWER = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
              "max_position_embeddings": 12}


def byte_clip_tokenizer() -> CLIPTokenizer:
    """CLIP's byte-level BPE with no merges (one token per character): small, so the tests stay fast."""
    characters = list(bytes_to_unicode().values())
    tokens = characters + [c + "</w>" for c in characters] + ["<|startoftext|>", "<|endoftext|>"]
    return CLIPTokenizer(vocab={token: i for i, token in enumerate(tokens)}, merges=[], model_max_length=12)


def images(n=3, size=32):
    return torch.rand(n, 3, size, size, generator=torch.Generator().manual_seed(1))


def open_clip_folder(tmp_path, config=OPEN_CLIP_CFG, state=None):
    """An open_clip model folder as the Hub serves LAION's: open_clip_config.json and the weights."""
    torch.manual_seed(0)
    model = OpenCLIP(**config["model_cfg"]).eval()
    folder = tmp_path / "open_clip"
    folder.mkdir()
    (folder / "open_clip_config.json").write_text(json.dumps(config))
    torch.save(model.state_dict() if state is None else state, folder / "open_clip_pytorch_model.bin")
    return model, folder


def transformers_folder(tmp_path, architecture, positions=12):
    """A save_pretrained folder of a small CLIPModel or AlignModel, with its tokenizer and image processor (an
    AlignModel's text tower and tokenizer with `positions` positions)."""
    torch.manual_seed(0)
    if architecture == "clip":
        tokenizer = byte_clip_tokenizer()
        ids = {"vocab_size": len(tokenizer), "bos_token_id": len(tokenizer) - 2, "eos_token_id": len(tokenizer) - 1}
        model = CLIPModel(CLIPConfig(text_config={**TEXT_TOWER, **ids}, projection_dim=16, vision_config={
            "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
            "image_size": 32, "patch_size": 8}))
        processor = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    else:
        vocab = {token: i for i, token in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "photo", "of",
                                                     "cat", "two", "dogs", ",", "!", ".", "##s"])}
        model = AlignModel(AlignConfig(
            text_config={**TEXT_TOWER, "vocab_size": len(vocab), "max_position_embeddings": positions},
            projection_dim=16,
            vision_config={"image_size": 32, "hidden_dim": 16, "kernel_sizes": [3], "in_channels": [32],
                           "out_channels": [16], "strides": [2], "num_block_repeats": [1], "expand_ratios": [1],
                           "depthwise_padding": [], "width_coefficient": 1.0, "depth_coefficient": 1.0}))
        tokenizer = BertTokenizer(vocab=vocab, model_max_length=positions)
        # kakaobrain/align-base's processor, scaled down: a square resize (346), a centre crop (289), bilinear
        processor = EfficientNetImageProcessor(size={"height": 38, "width": 38}, crop_size={"height": 32, "width": 32},
                                               do_center_crop=True, resample=2, rescale_factor=1 / 127.5,
                                               rescale_offset=True, include_top=False)
    folder = tmp_path / architecture
    disable_progress_bar()
    for part in (model, tokenizer, processor):
        part.save_pretrained(folder)
    return model.eval(), tokenizer, processor, folder
