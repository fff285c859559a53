"""CLIP baseline: image and text encoders, bias-free projections, cosine similarity with a temperature.

`DualEncoder` is what every model the suite evaluates offers (ours, and the wrappers around open_clip and
transformers models in `hypvl.models.library`): projected features, their embeddings (unit vectors here;
MERU and its kin override the lifting), CLIP's prompt ensembling, the similarity, the symmetric InfoNCE
loss, and the model's own `tokenizer`, input `image_size` and image view (`eval_view`). Images arrive in [0, 1]
and each model normalises them itself (ours: ImageNet mean/std, as MERU does).
"""

import math
from functools import cached_property

import torch
from PIL import Image
from torch import nn

from hypvl.data.transforms import EVAL_VIEWS
from hypvl.geometry import radial
from hypvl.losses.contrastive import clip_logits, global_contrastive

from .encoders import ImageEncoder, TextEncoder, Tokenizer

PIXEL_MEAN = (0.485, 0.456, 0.406)
PIXEL_STD = (0.229, 0.224, 0.225)
# the temperature's floor, ~0.01: the public code's literal (MERU meru/models.py CLIPBaseline.forward and
# MERU.forward: `clamp(logit_scale, max=4.6052)`, "ln(100) = ~4.6052"; HyCoCLIP inherits it), not ln 100 = 4.605170
MAX_LOGIT_SCALE = 4.6052


class DualEncoder(nn.Module):
    """The evaluation interface, Euclidean: subclasses give `image_features`, `text_features`,
    `trunk_features`, `tokenizer`, `image_size`, `text_parameters` and a log-space `logit_scale`.

    Its geometry is what every evaluation task reads and a model class may redefine (`hypvl.methods`, register_model):
    `embed_image`/`embed_text` (features -> embeddings), `similarity` (and `ranking_score`), `entailment_root`,
    `radius`, `exterior_angle` (the entailment score) and `feature_radius`."""

    geometry = "euclidean"
    # the batch fields `features` reads, a row per sample: what a micro-batch of a feature-cached accumulated step
    # holds; None where a sample's features may depend on the rest of its batch or on chance
    encoded_fields: tuple[str, ...] | None = ("images", "tokens")

    def clamp_scalars(self) -> None:
        """Clamp learned log-space scalars to the papers' ranges (called before each forward)."""
        with torch.no_grad():
            self.logit_scale.clamp_(max=MAX_LOGIT_SCALE)

    def eval_view(self, image: Image.Image, size: int, kind: str) -> Image.Image:
        """The `size` x `size` view of an image that an evaluation task of `kind` encodes, as MERU and HyCoCLIP view
        it: "crop" (shorter side resized, centre crop: classification, HierarCaps, BREEDS, scene understanding, the
        linear probe) or "squeeze" (a plain resize: retrieval, detection boxes, the radius statistics). The wrapped
        public models (`hypvl.models.library`) view every image as their own preprocessing does."""
        return EVAL_VIEWS[kind](image, size)

    def embed_image(self, feats: torch.Tensor) -> torch.Tensor:
        """Projected image features -> embeddings (unit vectors for CLIP)."""
        return nn.functional.normalize(feats, dim=-1)

    def embed_text(self, feats: torch.Tensor) -> torch.Tensor:
        """Projected text features -> embeddings (unit vectors for CLIP)."""
        return nn.functional.normalize(feats, dim=-1)

    def encode_image(self, images: torch.Tensor) -> torch.Tensor:
        return self.embed_image(self.image_features(images))

    def encode_text(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.embed_text(self.text_features(tokens))

    def ensemble_prompts(self, feats: torch.Tensor) -> torch.Tensor:
        """(C, P, D) projected prompt features per class -> (C, D) class embeddings:
        normalise, mean over prompts, normalise (CLIP's ensembling)."""
        return nn.functional.normalize(nn.functional.normalize(feats, dim=-1).mean(dim=1), dim=-1)

    def similarity(self, images: torch.Tensor, texts: torch.Tensor) -> torch.Tensor:
        """(B1, D), (B2, D) embeddings -> (B1, B2) scores, higher is more similar (cosine)."""
        return images @ texts.T

    def ranking_score(self, images: torch.Tensor, texts: torch.Tensor) -> torch.Tensor:
        """(B1, B2) scores ordered as `similarity` is, where they are cheaper to compute (retrieval ranks by them)."""
        return self.similarity(images, texts)

    def entailment_root(self, empty_text) -> torch.Tensor | None:
        """(D,) the point radii and entailment scores are measured from (HierarCaps' Radial Embeddings): the root a
        radial fine-tuning fixed or learned (`radial_root`, set by `load_checkpoint`), else `empty_text()` (the
        embedding of the empty string); None means the origin."""
        stored = getattr(self, "radial_root", None)
        return stored if stored is not None else empty_text()

    def radius(self, embeddings: torch.Tensor, root: torch.Tensor | None) -> torch.Tensor:
        """(N,) distance of each embedding from the root: d_r(e) = ||e - r||."""
        return radial.radius(embeddings, root)

    def exterior_angle(self, general: torch.Tensor, specific: torch.Tensor, root: torch.Tensor | None) -> torch.Tensor:
        """(N,) entailment score Xi_r(general[i], specific[i]) in [0, pi]: small where specific[i] lies near the ray
        from the root through general[i]."""
        return radial.exterior_angle(general, specific, root)

    def feature_radius(self, feats: torch.Tensor, embed) -> torch.Tensor:
        """(N,) the radius statistics' radius of projected features (`embed` lifts them): their norm, as CLIP's
        embeddings all have norm 1."""
        return torch.linalg.vector_norm(feats, dim=-1)

    def forward(self, batch: dict) -> dict[str, torch.Tensor]:
        """The loss terms of a training batch (`loss`), so that DistributedDataParallel wraps training steps."""
        return self.loss(batch)

    def loss(self, batch: dict) -> dict[str, torch.Tensor]:
        """The loss terms of a training batch: `loss_of` its `features`."""
        return self.loss_of(self.features(batch), batch)

    def features(self, batch: dict) -> dict[str, torch.Tensor]:
        """What the loss reads from the encoders: from the batch's `encoded_fields`, embeddings with a row per
        sample (here 'images' and 'texts'). A sample's rows depend on that sample alone, so a batch's features
        are its micro-batches' features concatenated (`hypvl.train.accumulation`)."""
        return {"images": self.encode_image(batch["images"]), "texts": self.encode_text(batch["tokens"])}

    def loss_of(self, features: dict[str, torch.Tensor], batch: dict) -> dict[str, torch.Tensor]:
        """Symmetric InfoNCE over the (global) batch's `features`; returns {'loss': ..., 'contrastive': ...}."""
        contrastive = global_contrastive(lambda a, b: clip_logits(a, b, self.logit_scale), features["images"],
                                         features["texts"])
        return {"loss": contrastive, "contrastive": contrastive.detach()}


class CLIP(DualEncoder):
    """Euclidean CLIP; `loss(batch)` is the symmetric InfoNCE over cosine logits."""

    scalar_names = ("logit_scale",)

    def __init__(self, visual: ImageEncoder, textual: TextEncoder, embed_dim: int, temperature: float = 0.07):
        super().__init__()
        self.visual, self.textual = visual, textual
        self.visual_proj = nn.Linear(visual.width, embed_dim, bias=False)
        self.textual_proj = nn.Linear(textual.width, embed_dim, bias=False)
        nn.init.normal_(self.visual_proj.weight, std=visual.width ** -0.5)
        nn.init.normal_(self.textual_proj.weight, std=textual.width ** -0.5)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1.0 / temperature)))
        self.register_buffer("pixel_mean", torch.tensor(PIXEL_MEAN).view(3, 1, 1))
        self.register_buffer("pixel_std", torch.tensor(PIXEL_STD).view(3, 1, 1))

    def set_grad_checkpointing(self, enable: bool = True) -> None:
        """Recompute the encoders' activations in the backward pass instead of keeping them (activation
        checkpointing: the same gradients for less memory and about a third more compute)."""
        self.visual.vit.set_grad_checkpointing(enable)
        self.textual.transformer.set_grad_checkpointing(enable)

    @cached_property
    def tokenizer(self) -> Tokenizer:
        """CLIP's BPE tokenizer at the text encoder's context length."""
        return Tokenizer(self.textual.context_length)

    @property
    def image_size(self) -> int:
        """The ViT's input size (pixels, square)."""
        return self.visual.image_size

    def text_parameters(self) -> list[nn.Parameter]:
        """The text tower, its projection and the text-side learned scalar where the model has one (what
        text-only fine-tuning trains)."""
        scalar = [self.textual_alpha] if hasattr(self, "textual_alpha") else []
        return [*self.textual.parameters(), *self.textual_proj.parameters(), *scalar]

    def trunk_features(self, images: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) in [0, 1] -> (B, width) image-encoder output before the projection."""
        return self.visual((images - self.pixel_mean) / self.pixel_std)

    def image_features(self, images: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) in [0, 1] -> (B, embed_dim) projected, not yet normalised or lifted."""
        return self.visual_proj(self.trunk_features(images))

    def text_features(self, tokens: torch.Tensor) -> torch.Tensor:
        """(B, L) token ids -> (B, embed_dim) projected, not yet normalised or lifted."""
        return self.textual_proj(self.textual(tokens))
