"""Public dual encoders loaded by open_clip or transformers, wrapped behind the evaluation interface.

A folder in the library's own on-disk format (what the Hub serves, or a smoke stand-in written the same way) is
loaded by the library's own code (`open_clip.create_model("local-dir:...")`,
`transformers.AutoModel.from_pretrained`); nothing the libraries load is re-implemented. The wrapper adds what our
evaluation reads (`DualEncoder`): projected features, the model's own tokenizer and input size, its own
preprocessing's resize and crop as every image task's view (`eval_view`), and its pixel normalisation. Its recipe
says how to rebuild the architecture without any download (the library, its config, the tokenizer files), so
`hypvl.models.checkpoints.load_checkpoint` rebuilds it and loads the weights strictly.
"""

import logging
import tempfile
from contextlib import contextmanager
from pathlib import Path

import torch
from PIL import Image
from torch import nn
from torchvision.transforms.functional import to_pil_image

from hypvl.errors import InputError

from .clip import DualEncoder

OPEN_CLIP_CONFIG = "open_clip_config.json"
# transformers model types wrapped here -> whether the text tower needs the padding mask (BERT attends both
# ways; CLIP's causal text tower never lets the tokens after the end-of-text token reach its features)
TEXT_PADDING_MASK = {"clip": False, "align": True}
# transformers model types whose processor pads and truncates text shorter than the text tower's positions:
# AlignProcessor's `text_kwargs` (64 tokens), the length ALIGN is used with (BERT itself has 512 positions)
TEXT_LENGTH = {"align": 64}
MIN_TEMPERATURE = 0.01  # ALIGN's learned temperature, kept at CLIP's bound while a stand-in trains


class LibraryModel(DualEncoder):
    """A library's dual encoder (`self.model`) with its tokenizer and pixel affine (x * scale + shift, per
    channel, on images in [0, 1]); the state dict is the library's, under `model.`."""

    # a library's towers may hold batch norm (ALIGN's EfficientNet) or dropout (BERT, in functional calls that no
    # module scan sees): a stand-in trains in one pass over its batch (train.accum_steps 1)
    encoded_fields = None

    def __init__(self, model: nn.Module, tokenizer, image_size: int, pixel_scale, pixel_shift):
        super().__init__()
        self.model, self._tokenizer, self._image_size = model, tokenizer, int(image_size)
        self.register_buffer("pixel_scale", torch.tensor(pixel_scale, dtype=torch.float32).view(3, 1, 1),
                             persistent=False)
        self.register_buffer("pixel_shift", torch.tensor(pixel_shift, dtype=torch.float32).view(3, 1, 1),
                             persistent=False)

    @property
    def tokenizer(self):
        """The library's own tokenizer: texts -> (B, L) token ids."""
        return self._tokenizer

    @property
    def image_size(self) -> int:
        return self._image_size

    def pixels(self, images: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) in [0, 1] -> what the library's vision tower takes."""
        return images * self.pixel_scale + self.pixel_shift


class OpenCLIPModel(LibraryModel):
    """An open_clip CLIP; `config` is its `open_clip_config.json` (model_cfg, preprocess_cfg)."""

    def __init__(self, model, tokenizer, config: dict):
        mean, std = model.visual.preprocess_cfg["mean"], model.visual.preprocess_cfg["std"]
        size = model.visual.preprocess_cfg["size"]
        super().__init__(model, tokenizer, size if isinstance(size, int) else size[0],
                         [1 / s for s in std], [-m / s for m, s in zip(mean, std)])
        self.config = config
        self._view = _open_clip_view(model.visual.preprocess_cfg)

    def eval_view(self, image: Image.Image, size: int, kind: str) -> Image.Image:
        """The image resized and cropped by open_clip's own evaluation transform (its `resize_mode`: CLIP's shorter
        side and centre crop), before normalisation, for every task (`kind` aside); `size` is the model's own."""
        return to_pil_image((self._view(image) * 255).round().to(torch.uint8))

    @property
    def logit_scale(self) -> nn.Parameter:
        return self.model.logit_scale

    def recipe(self) -> dict:
        return {"library": "open_clip", "open_clip_config": self.config}

    def image_features(self, images):
        return self.model.encode_image(self.pixels(images))

    def text_features(self, tokens):
        return self.model.encode_text(tokens)

    def trunk_features(self, images):
        """The vision transformer's pooled output before its projection (open_clip's own steps)."""
        visual = self.model.visual
        if not hasattr(visual, "_embeds"):
            raise InputError(f"open_clip vision tower {type(visual).__name__} gives no trunk features here")
        pooled, _ = visual._pool(visual.transformer(visual._embeds(self.pixels(images))))
        return pooled

    def text_parameters(self) -> list[nn.Parameter]:
        model = self.model
        return [*model.token_embedding.parameters(), model.positional_embedding, *model.transformer.parameters(),
                *model.ln_final.parameters(), model.text_projection]


class TransformersModel(LibraryModel):
    """A transformers CLIPModel or AlignModel with its tokenizer and image processor; `files` are their saved
    files (name -> text), which rebuild both without a download."""

    def __init__(self, model, tokenizer, processor, files: dict[str, str]):
        if model.config.model_type not in TEXT_PADDING_MASK:
            raise InputError(f"transformers model type {model.config.model_type!r} is not wrapped here "
                             f"(wrapped: {', '.join(TEXT_PADDING_MASK)})")
        positions = model.config.text_config.max_position_embeddings
        length = min(positions, TEXT_LENGTH.get(model.config.model_type, positions))
        super().__init__(model, _PaddedTokenizer(tokenizer, length), _processor_size(processor),
                         *pixel_affine(processor))
        self.files, self._processor = files, processor
        self._pad_id = tokenizer.pad_token_id if TEXT_PADDING_MASK[model.config.model_type] else None

    @property
    def logit_scale(self) -> torch.Tensor:
        model = self.model
        return model.logit_scale if hasattr(model, "logit_scale") else -model.temperature.log()

    def clamp_scalars(self) -> None:
        if hasattr(self.model, "logit_scale"):
            super().clamp_scalars()
        else:
            with torch.no_grad():
                self.model.temperature.clamp_(min=MIN_TEMPERATURE)

    def eval_view(self, image: Image.Image, size: int, kind: str) -> Image.Image:
        """The image resized and cropped by the model's own image processor (CLIP's: shorter side and centre crop;
        ALIGN's: a square resize, then a centre crop), before rescaling, for every task (`kind` aside); `size` is
        the model's own."""
        off = {"do_rescale": False, "do_normalize": False} | ({"include_top": False}
                                                             if hasattr(self._processor, "include_top") else {})
        pixels = self._processor(images=image, return_tensors="pt", **off)["pixel_values"][0]
        return to_pil_image(pixels.round().clamp(0, 255).to(torch.uint8))

    def recipe(self) -> dict:
        return {"library": "transformers", "config": self.model.config.to_dict(), "files": self.files}

    def image_features(self, images):
        return self.model.get_image_features(pixel_values=self.pixels(images)).pooler_output  # the projection

    def text_features(self, tokens):
        mask = None if self._pad_id is None else (tokens != self._pad_id).long()
        return self.model.get_text_features(input_ids=tokens, attention_mask=mask).pooler_output

    def trunk_features(self, images):
        """The vision tower's pooled output, before any projection."""
        return self.model.vision_model(pixel_values=self.pixels(images)).pooler_output

    def text_parameters(self) -> list[nn.Parameter]:
        return [*self.model.text_model.parameters(), *self.model.text_projection.parameters()]

    def save_pretrained(self, folder: Path) -> None:
        """Write the model, tokenizer and image processor in transformers' on-disk layout into `folder`."""
        with quiet_libraries("transformers"):
            self.model.save_pretrained(folder)
        for name, text in self.files.items():
            (Path(folder) / name).write_text(text, encoding="utf-8")


def wrap_transformers(model, tokenizer, processor) -> TransformersModel:
    """`model` wrapped with its tokenizer and image processor (their saved files kept for the recipe)."""
    with tempfile.TemporaryDirectory() as scratch:
        tokenizer.save_pretrained(scratch)
        processor.save_pretrained(scratch)
        files = {path.name: path.read_text(encoding="utf-8") for path in sorted(Path(scratch).iterdir())}
    return TransformersModel(model, tokenizer, processor, files)


class _PaddedTokenizer:
    """A transformers tokenizer as a callable texts -> (B, L) ids, padded (and truncated) to L."""

    def __init__(self, tokenizer, context_length: int):
        self.tokenizer = tokenizer
        self.context_length = min(context_length, tokenizer.model_max_length)

    def __call__(self, texts) -> torch.Tensor:
        return self.tokenizer(list(texts), padding="max_length", truncation=True, max_length=self.context_length,
                              return_tensors="pt")["input_ids"]


def pixel_affine(processor) -> tuple[list[float], list[float]]:
    """Per-channel (scale, shift) with which `processor` maps pixels in [0, 1] to the model's input, found by
    running it (resizing and cropping off) on black and white images: our pipeline has already resized."""
    probe = torch.stack([torch.zeros(3, 2, 2), torch.full((3, 2, 2), 255.0)])
    out = processor(images=list(probe), do_resize=False, do_center_crop=False, return_tensors="pt")["pixel_values"]
    black, white = out[0, :, 0, 0], out[1, :, 0, 0]
    return (white - black).tolist(), black.tolist()


def _processor_size(processor) -> int:
    """The square input size a transformers image processor produces (its crop, else its resize)."""
    size = processor.crop_size if getattr(processor, "do_center_crop", False) else processor.size
    size = size if isinstance(size, int) else size.get("height", size.get("shortest_edge"))
    if size is None:
        raise InputError(f"{type(processor).__name__}: no square input size in {processor.size}")
    return int(size)


def _open_clip_view(preprocess_cfg: dict):
    """open_clip's evaluation transform for `preprocess_cfg` without its normalisation: PIL -> [0, 1] tensor."""
    import open_clip

    return open_clip.image_transform(preprocess_cfg["size"], is_train=False, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0),
                                     resize_mode=preprocess_cfg.get("resize_mode"),
                                     interpolation=preprocess_cfg.get("interpolation"))


@contextmanager
def quiet_libraries(*loggers):
    """Silence the libraries' info/warning chatter (e.g. 'no weights found' when rebuilding an architecture)
    and transformers' progress bars."""
    if "transformers" in loggers:
        from transformers.utils.logging import disable_progress_bar

        disable_progress_bar()
    previous = [(name, logging.getLogger(name).level) for name in loggers]
    for name, _ in previous:
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        yield
    finally:
        for name, level in previous:
            logging.getLogger(name).setLevel(level)
