"""Phrase-grounding detector loaded through `transformers` (OWL-ViT / OWLv2 family).

HyCoCLIP grounded RedCaps with GLIP, which `transformers` does not ship; OWLv2
(`google/owlv2-base-patch16-ensemble`) is the open-vocabulary substitute configured here.
For every phrase the detector returns its best box (the highest-scoring of the model's box
predictions for that text query) with that box's sigmoid score; HyCoCLIP's filters
(`filters.BoxFilter`) then decide what to keep. Phrases longer than the text tower's context
(16 tokens for the released OWLv2) are truncated by the processor.

Precision (config `grounding.precision`, recorded in grounding.json): `fp32` computes the forward pass as PyTorch
does by default (float32 matmuls; cuDNN's convolutions, OWLv2's patch embedding among them, may use TF32 on
Ampere and later GPUs); `tf32` lets CUDA's float32 matmuls use TF32 too; `bf16` runs it under bfloat16 autocast.
The images are prepared, and the boxes and scores read, in float32 either way. tf32 and bf16 run on a GPU's tensor
cores and can move the boxes: `benchmarks/detector_precision.py` measures both on a corpus's own samples.
"""

import logging
from contextlib import contextmanager
from pathlib import Path

import torch

from hypvl.errors import InputError
from hypvl.grounding.filters import clip_box

SUPPORTED_MODEL_TYPES = ("owlv2", "owlvit")
PRECISIONS = ("fp32", "tf32", "bf16")
log = logging.getLogger(__name__)


@contextmanager
def computed_in(precision: str, device_type: str):
    """Within it, float32 work on `device_type` computes in `precision` (one of PRECISIONS, as the module says);
    PyTorch's matmul setting comes back on exit."""
    if precision == "bf16":
        with torch.autocast(device_type, dtype=torch.bfloat16):
            yield
    elif precision == "tf32":
        previous = torch.backends.cuda.matmul.fp32_precision
        torch.backends.cuda.matmul.fp32_precision = "tf32"
        try:
            yield
        finally:
            torch.backends.cuda.matmul.fp32_precision = previous
    else:
        yield


def _corners(boxes):
    """(..., 4) centre-size boxes -> (..., 4) corner boxes [x1, y1, x2, y2], same units."""
    cx, cy, w, h = boxes.unbind(-1)
    return torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], dim=-1)


class PhraseGroundingDetector:
    """Boxes for text phrases in images, from an OWL-ViT/OWLv2 model and its processor."""

    def __init__(self, model, processor, device="cpu", batch_size=8, precision="fp32"):
        model_type = model.config.model_type
        if model_type not in SUPPORTED_MODEL_TYPES:
            raise InputError(f"detector model type {model_type!r} is not one of "
                             f"{SUPPORTED_MODEL_TYPES}")
        if precision not in PRECISIONS:
            raise InputError(f"detector precision {precision!r} is not one of {PRECISIONS}")
        self.precision = precision
        self.model = model.to(device).eval()
        self.processor = processor
        self.device = device
        self.batch_size = batch_size
        # OWLv2 pads each image to a square (bottom/right) before resizing, so its normalised
        # boxes are relative to the padded square; OWL-ViT stretches the image instead.
        self.pads_to_square = model_type == "owlv2"

    @classmethod
    def from_pretrained(cls, model_id, device="cpu", batch_size=8, revision=None, hub_cache=None, precision="fp32"):
        """Load model and processor by Hub id (at `revision`, a commit where pinned) or local path
        (HF_HUB_OFFLINE=1 uses the cache; `hub_cache`: only that Hub cache, e.g. a mirror's). A Hub id without a
        revision follows the default branch: said in a warning; the commit loaded is `commit` either way."""
        from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor

        where = {} if hub_cache is None else {"cache_dir": str(hub_cache), "local_files_only": True}
        where["trust_remote_code"] = False  # never a model's own code, never a [y/N] question inside a job
        try:
            processor = AutoProcessor.from_pretrained(model_id, revision=revision, **where)
            model = AutoModelForZeroShotObjectDetection.from_pretrained(model_id, revision=revision, **where)
        except (OSError, ValueError) as error:  # ValueError: it brings code of its own, which is refused
            detail = " ".join(str(error).split())
            raise InputError(f"detector {model_id!r} could not be loaded: {detail}") from error
        detector = cls(model, processor, device, batch_size, precision)
        if revision is None and not Path(model_id).is_dir():
            log.warning("detector %s is not pinned to a revision (config grounding.detector_revision): loaded commit "
                        "%s of its default branch", model_id, detector.commit)
        return detector

    @property
    def commit(self):
        """The Hub commit the model was loaded from (None for a local or in-memory model)."""
        return getattr(self.model.config, "_commit_hash", None)

    def _pixel_scale(self, width, height):
        """(sx, sy) multiplying normalised box coordinates into original image pixels."""
        if self.pads_to_square:
            side = max(width, height)
            return side, side
        return width, height

    @torch.no_grad()
    def _detect_chunk(self, images, phrase_lists):
        """Best box per phrase for at most `batch_size` images (each with >= 1 phrase). The images are prepared (padded,
        blurred against aliasing, resized to the model's input) on the detector's device: on a CPU core the released
        OWLv2's 960-px preparation takes longer than its forward pass on a GPU (benchmarks/grounding_throughput.py)."""
        inputs = self.processor(images=[im.convert("RGB") for im in images], text=phrase_lists,
                                return_tensors="pt", truncation=True, device=self.device).to(self.device)
        with computed_in(self.precision, torch.device(self.device).type):
            outputs = self.model(**inputs)
        # logits: (B, num_boxes, max_queries); pred_boxes: (B, num_boxes, 4) normalised cxcywh.
        best_logit, best_box = outputs.logits.max(dim=1)
        results = []
        for i, (image, phrases) in enumerate(zip(images, phrase_lists)):
            sx, sy = self._pixel_scale(*image.size)
            scale = torch.tensor([sx, sy, sx, sy], dtype=torch.float32)
            boxes = _corners(outputs.pred_boxes[i].float().cpu()) * scale
            scores = torch.sigmoid(best_logit[i].float().cpu())
            results.append([
                {"phrase": phrase,
                 "box": clip_box(boxes[best_box[i, q]].tolist(), *image.size),
                 "score": float(scores[q])}
                for q, phrase in enumerate(phrases)])
        return results

    def __call__(self, records, phrase_lists):
        """Candidate boxes, one list per record: [{phrase (text), box [x1,y1,x2,y2] pixels,
        score}] for every `Phrase` of `phrase_lists[i]` in `records[i]["image"]`."""
        results = [[] for _ in records]
        todo = [i for i, phrases in enumerate(phrase_lists) if phrases]
        for start in range(0, len(todo), self.batch_size):
            chunk = todo[start:start + self.batch_size]
            found = self._detect_chunk([records[i]["image"] for i in chunk],
                                       [[p.text for p in phrase_lists[i]] for i in chunk])
            for i, candidates in zip(chunk, found):
                results[i] = candidates
        return results


def char_level_clip_tokenizer(max_length=32):
    """An offline CLIPTokenizer with no BPE merges: its vocabulary is the 256 byte-level
    characters, each also as a word-final `</w>` symbol, plus CLIP's start/end tokens, so every
    text tokenises to characters. Stands in for a Hub tokenizer in tests and benchmarks."""
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers import CLIPTokenizer

    symbols = sorted(ByteLevel.alphabet())
    vocab = {s: i for i, s in enumerate(symbols + [s + "</w>" for s in symbols])}
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    return CLIPTokenizer(vocab=vocab, merges=[], model_max_length=max_length)


def random_owlv2(text: dict, vision: dict, projection_dim: int, tokenizer, seed=0):
    """A randomly initialised OWLv2 (towers as `text` and `vision` config dicts, the image size in `vision`) and its
    processor around `tokenizer`; built offline. Default-initialised heads saturate (boxes collapse to zero size,
    scores to 1); small head weights leave boxes near OWLv2's per-patch anchor boxes and scores near
    sigmoid(cosine similarity), spread around the 0.65 threshold."""
    from transformers import (Owlv2Config, Owlv2ForObjectDetection, Owlv2ImageProcessor,
                              Owlv2Processor)

    config = Owlv2Config(
        text_config=dict(text, vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id),
        vision_config=vision, projection_dim=projection_dim)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = Owlv2ForObjectDetection(config)
        for head in (model.class_head, model.box_head):
            for parameter in head.parameters():
                torch.nn.init.normal_(parameter, std=0.02)
    size = vision["image_size"]
    processor = Owlv2Processor(image_processor=Owlv2ImageProcessor(size={"height": size, "width": size}),
                               tokenizer=tokenizer)
    return model, processor


def random_owlv2_detector(seed=0, image_size=64, width=32, max_text_length=32, device="cpu", precision="fp32"):
    """A randomly initialised, tiny OWLv2 (1 layer per tower, `width` hidden units, patch 16,
    `image_size` input) with the char-level tokenizer and an OWLv2 image processor, computing in `precision`;
    built offline, for tests and benchmarks."""
    tower = dict(hidden_size=width, intermediate_size=2 * width, num_hidden_layers=1, num_attention_heads=2)
    model, processor = random_owlv2(dict(tower, max_position_embeddings=max_text_length),
                                    dict(tower, image_size=image_size, patch_size=16), width,
                                    char_level_clip_tokenizer(max_text_length), seed)
    return PhraseGroundingDetector(model, processor, device, precision=precision)
