"""MERU: CLIP's encoders lifted onto the Lorentz hyperboloid, with an image-text entailment cone loss.

Learned scalars live in log space: the curvature c (init 1, clamped to [c0/10, 10 c0]), the image and
text scale factors (init 1/sqrt(embed_dim), clamped to <= 1) and the temperature (as in CLIP).
"""

import math

import torch
from torch import nn

from hypvl.errors import InputError
from hypvl.geometry import lorentz
from hypvl.losses.contrastive import (
    lorentz_inner_logits,
    lorentz_logits,
    global_contrastive,
)
from hypvl.losses.entailment import entailment_loss
from hypvl.methods import CONTRASTIVE_SIMILARITIES

from .clip import CLIP

# contrastive_similarity -> logits(images, texts, curv, logit_scale)
CONTRASTIVE_LOGITS = {"neg_distance": lorentz_logits, "lorentz_inner": lorentz_inner_logits}


class MERU(CLIP):
    """Hyperbolic CLIP (Desai et al. 2023): loss = contrastive on -d_L + entail_weight * L_ent(T entails I).

    `contrastive_similarity="lorentz_inner"` (Table 4 row 3) puts the Lorentzian inner product in the contrastive
    loss instead of -d_L; inference ranks the same either way (-d_L is monotone in the inner product)."""

    geometry = "lorentz"
    scalar_names = ("logit_scale", "curv", "visual_alpha", "textual_alpha")

    def __init__(self, visual, textual, embed_dim: int, temperature: float = 0.07, curv_init: float = 1.0,
                 learn_curv: bool = True, entail_weight: float = 0.2, contrastive_similarity: str = "neg_distance"):
        if contrastive_similarity not in CONTRASTIVE_SIMILARITIES:
            raise InputError(f"MERU: contrastive_similarity {contrastive_similarity!r} is not one of "
                             f"{', '.join(CONTRASTIVE_SIMILARITIES)}")
        super().__init__(visual, textual, embed_dim, temperature)
        self.curv = nn.Parameter(torch.tensor(math.log(curv_init)), requires_grad=learn_curv)
        self._curv_range = (math.log(curv_init / 10), math.log(curv_init * 10))
        self.visual_alpha = nn.Parameter(torch.tensor(embed_dim ** -0.5).log())
        self.textual_alpha = nn.Parameter(torch.tensor(embed_dim ** -0.5).log())
        self.entail_weight = entail_weight
        self.contrastive_logits = CONTRASTIVE_LOGITS[contrastive_similarity]

    def clamp_scalars(self) -> None:
        super().clamp_scalars()
        with torch.no_grad():
            self.curv.clamp_(*self._curv_range)
            self.visual_alpha.clamp_(max=0.0)
            self.textual_alpha.clamp_(max=0.0)

    @property
    def curvature(self) -> torch.Tensor:
        """The positive curvature parameter c (the space has curvature -c)."""
        return self.curv.exp()

    def embed_image(self, feats: torch.Tensor) -> torch.Tensor:
        """Projected image features -> space components on the hyperboloid: exp_0(alpha_img * x)."""
        return lorentz.exp_map0(feats * self.visual_alpha.exp(), self.curvature)

    def embed_text(self, feats: torch.Tensor) -> torch.Tensor:
        """Projected text features -> space components on the hyperboloid: exp_0(alpha_txt * x)."""
        return lorentz.exp_map0(feats * self.textual_alpha.exp(), self.curvature)

    def ensemble_prompts(self, feats: torch.Tensor) -> torch.Tensor:
        """(C, P, D) projected prompt features -> (C, D): mean in the tangent space, then scale and lift."""
        return self.embed_text(feats.mean(dim=1))

    def similarity(self, images: torch.Tensor, texts: torch.Tensor) -> torch.Tensor:
        """Negative Lorentzian distance (B1, B2); ranks like MERU's Lorentzian inner product."""
        return -lorentz.pairwise_dist(images, texts, self.curvature)

    def ranking_score(self, images: torch.Tensor, texts: torch.Tensor) -> torch.Tensor:
        """The Lorentzian inner product (B1, B2): ranks exactly as -d_L = -acosh(-c<x, y>_L)/sqrt(c), without the
        acosh."""
        return lorentz.pairwise_inner(images, texts, self.curvature)

    def entailment_root(self, empty_text) -> None:
        """The origin of the hyperboloid."""
        return None

    def radius(self, embeddings: torch.Tensor, root=None) -> torch.Tensor:
        """(N,) geodesic distance to the origin."""
        return lorentz.dist_to_origin(embeddings, self.curvature)

    def exterior_angle(self, general: torch.Tensor, specific: torch.Tensor, root=None) -> torch.Tensor:
        """(N,) the exterior angle of the triangle (O, general[i], specific[i]) at general[i]."""
        return lorentz.oxy_angle(general, specific, self.curvature)

    def feature_radius(self, feats: torch.Tensor, embed) -> torch.Tensor:
        """(N,) geodesic distance to the origin of the lifted features."""
        return self.radius(embed(feats))

    def loss_of(self, features: dict[str, torch.Tensor], batch: dict) -> dict[str, torch.Tensor]:
        """MERU's loss terms on the (B, D) image and text embeddings of the batch's pairs."""
        img, txt = features["images"], features["texts"]
        curv = self.curvature
        contrastive = global_contrastive(lambda a, b: self.contrastive_logits(a, b, curv, self.logit_scale), img, txt)
        entail = entailment_loss(txt, img, curv)
        return {"loss": contrastive + self.entail_weight * entail,
                "contrastive": contrastive.detach(), "entailment": entail.detach()}
