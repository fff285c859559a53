"""PoinCLIP: MERU's recipe with the hyperboloid replaced by the Poincaré ball (Srivastava & Wu 2024, Sec. 4).

Encoders, projections and learned log-space scalars are MERU's: curvature c (init 1, clamped to
[c0/10, 10 c0]; the paper says only "learnable"), image and text scales (init 1/sqrt(n), the paper's
lambda_img / lambda_txt) and the temperature (not stated; CLIP's). Projected features are scaled and
exp-mapped at the origin into the ball of curvature -c; the contrastive logit is the negative Poincaré
distance and the entailment term PoinCLIP's entropy-ordered cone loss (`hypvl.losses.poinclip`). The loss terms
also report how the batch's pairs were ordered (`apex_statistics`: apex rate, agreement with the radius order),
which the trainer logs.

`exp_map`: "standard" is the usual exp map at the origin (conformal factor 2/(1 - c|x|^2), geoopt's
`expmap0`); "literal" reads the printed factor 1/(1 - |x|^2) of Eq. 3, i.e. the standard map of half the
vector (the image of MERU's Lorentz exp map in the ball).
"""

import torch

from hypvl.geometry import poincare
from hypvl.losses.contrastive import global_contrastive
from hypvl.losses.poinclip import (
    ENTAILMENT_ORDERS,
    ENTROPY_INPUTS,
    apex_statistics,
    poincare_logits,
    poinclip_entailment,
)

from .meru import MERU

EXP_MAPS = {"standard": 1.0, "literal": 0.5}  # factor on the tangent vector before the standard exp map


class PoinCLIP(MERU):
    """Loss = contrastive on -d_P + entail_weight * L_entail (Eq. 9, with lambda_reg), apex per pair by entropy."""

    geometry = "poincare"

    def __init__(self, visual, textual, embed_dim: int, temperature: float = 0.07, curv_init: float = 1.0,
                 learn_curv: bool = True, entail_weight: float = 0.1, lambda_reg: float = 0.1,
                 entailment_order: str = "entropy", entropy: str = "literal", exp_map: str = "standard"):
        super().__init__(visual, textual, embed_dim, temperature, curv_init, learn_curv, entail_weight)
        for name, value, known in (("entailment_order", entailment_order, ENTAILMENT_ORDERS),
                                   ("entropy", entropy, ENTROPY_INPUTS), ("exp_map", exp_map, tuple(EXP_MAPS))):
            if value not in known:
                raise ValueError(f"PoinCLIP {name} must be one of {list(known)}; got {value!r}")
        self.lambda_reg, self.entailment_order, self.entropy = lambda_reg, entailment_order, entropy
        self.exp_map = exp_map

    def _lift(self, feats: torch.Tensor, log_alpha: torch.Tensor) -> torch.Tensor:
        return poincare.exp_map0(feats * (log_alpha.exp() * EXP_MAPS[self.exp_map]), self.curvature)

    def embed_image(self, feats: torch.Tensor) -> torch.Tensor:
        """Projected image features -> points in the ball: exp_0(lambda_img * x)."""
        return self._lift(feats, self.visual_alpha)

    def embed_text(self, feats: torch.Tensor) -> torch.Tensor:
        """Projected text features -> points in the ball: exp_0(lambda_txt * x)."""
        return self._lift(feats, self.textual_alpha)

    def similarity(self, images: torch.Tensor, texts: torch.Tensor) -> torch.Tensor:
        """Negative Poincaré distance (B1, B2)."""
        return -poincare.pairwise_dist(images, texts, self.curvature)

    def ranking_score(self, images: torch.Tensor, texts: torch.Tensor) -> torch.Tensor:
        return self.similarity(images, texts)

    def radius(self, embeddings: torch.Tensor, root=None) -> torch.Tensor:
        """(N,) geodesic distance to the origin of the ball."""
        return poincare.dist_to_origin(embeddings, self.curvature)

    def exterior_angle(self, general: torch.Tensor, specific: torch.Tensor, root=None) -> torch.Tensor:
        """(N,) the exterior angle of the triangle (O, general[i], specific[i]) at general[i], in the ball."""
        return poincare.oxy_angle(general, specific, self.curvature)

    def loss_of(self, features: dict[str, torch.Tensor], batch: dict) -> dict[str, torch.Tensor]:
        img, txt = features["images"], features["texts"]
        curv = self.curvature
        contrastive = global_contrastive(lambda a, b: poincare_logits(a, b, curv, self.logit_scale), img, txt)
        entail = poinclip_entailment(img, txt, curv, self.lambda_reg, self.entailment_order, self.entropy)
        return {"loss": contrastive + self.entail_weight * entail,
                "contrastive": contrastive.detach(), "entailment": entail.detach(),
                **apex_statistics(img.detach(), txt.detach(), self.entailment_order, self.entropy)}
