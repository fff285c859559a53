"""HyCoCLIP: MERU plus box-level compositions (Pal et al. 2025, Sec. 2).

Each sample also carries one box crop and its noun phrase; boxes are more general than the whole.
loss = hCC + gamma * hCE, with hCC the mean of four contrastive terms and hCE the sum of four
entailment terms whose cone apertures are scaled by eta_inter (image-text) and eta_intra (box-whole).
"""

import torch

from hypvl.losses.contrastive import HCC_TERMS, hcc_loss
from hypvl.losses.entailment import HCE_TERMS, hce_loss

from .meru import MERU


class HyCoCLIP(MERU):
    """Compositional entailment learning; `hcc_terms` / `hce_terms` select loss terms (Table 4 ablation)."""

    uses_boxes = True
    encoded_fields = ("images", "tokens", "box_images", "box_tokens")

    def __init__(self, visual, textual, embed_dim: int, temperature: float = 0.07, curv_init: float = 1.0,
                 learn_curv: bool = True, gamma: float = 0.1, eta_inter: float = 0.7, eta_intra: float = 1.2,
                 hcc_terms=HCC_TERMS, hce_terms=HCE_TERMS):
        super().__init__(visual, textual, embed_dim, temperature, curv_init, learn_curv, entail_weight=0.0)
        self.gamma, self.eta_inter, self.eta_intra = gamma, eta_inter, eta_intra
        self.hcc_terms, self.hce_terms = tuple(hcc_terms), tuple(hce_terms)

    def features(self, batch: dict) -> dict[str, torch.Tensor]:
        """Embeddings of the whole images and captions and of the box crops and phrases (one encoder pass each)."""
        n = batch["images"].shape[0]
        images = self.encode_image(torch.cat([batch["images"], batch["box_images"]]))
        texts = self.encode_text(torch.cat([batch["tokens"], batch["box_tokens"]]))
        return {"images": images[:n], "texts": texts[:n], "box_images": images[n:], "box_texts": texts[n:]}

    def loss_of(self, features: dict[str, torch.Tensor], batch: dict) -> dict[str, torch.Tensor]:
        img, txt, box_img, box_txt = (features[k] for k in ("images", "texts", "box_images", "box_texts"))
        curv = self.curvature
        hcc = hcc_loss(img, txt, box_img, box_txt, curv, self.logit_scale, terms=self.hcc_terms)
        hce = hce_loss(img, txt, box_img, box_txt, curv, self.eta_inter, self.eta_intra, terms=self.hce_terms)
        return {"loss": hcc + self.gamma * hce, "contrastive": hcc.detach(), "entailment": hce.detach()}
