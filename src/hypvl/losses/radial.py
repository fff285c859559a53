"""Radial Embedding (RE) alignment losses (HierarCaps paper Sec. 4.1, 6; App. B.2, B.4, C.5) on unit-norm text
embeddings.

A triplet (e, e', e'') is a general caption e, a caption e' that entails it and a caption e'' that contradicts it
(HierarCaps tiers (P_i, P_{i+1}, N_i)). Each loss gives a signed *positive term* for (e, e') and a signed *negative
term* for (e, e''), both shaped (T, B) (tier-major, as the authors' train.py ravels them); a triplet's loss is their
sum. RE: Xi_r(e, e') and -Xi_r(e, e''). Entailment cones (EC, Table 5): margin hinges around the half-aperture
theta_eps(e), in one of two readings of the margin alpha:
- `outside` (App. B.2, the form whose alpha -> infinity limit is RE): max(-alpha, +-(Xi - theta));
- `inside` (App. C.5's printed formula): [+-(Xi - theta + alpha)]^+.
They agree on positive pairs up to the constant alpha and differ on negative pairs (hinge at theta + alpha or
theta - alpha); at alpha = 0 both are Sec. 6.3's [+-(Xi - theta)]^+.
"""

import torch
from torch import Tensor

from hypvl.geometry import radial

EC_MARGINS = ("outside", "inside")
REGULARISERS = ("code", "paper")
ANGLE_EPS = 1e-6  # keeps arccos's gradient finite when two caption embeddings are (numerically) collinear


def re_terms(general: Tensor, specific: Tensor, negative: Tensor, root: Tensor) -> tuple[Tensor, Tensor]:
    """RE terms Xi_r(e, e') and -Xi_r(e, e'') of triplets given as (..., D) embeddings; L_RE is their sum."""
    return (radial.exterior_angle(general, specific, root, ANGLE_EPS),
            -radial.exterior_angle(general, negative, root, ANGLE_EPS))


def ec_terms(general: Tensor, specific: Tensor, negative: Tensor, root: Tensor, alpha: float, epsilon: float,
             margin: str = "outside") -> tuple[Tensor, Tensor]:
    """EC margin-loss terms of the positive and the negative pair (module docstring), theta = theta_eps(e)."""
    if margin not in EC_MARGINS:
        raise ValueError(f"EC margin reading must be one of {list(EC_MARGINS)}; got {margin!r}")
    theta = radial.half_aperture(general, root, epsilon)
    to_specific = radial.exterior_angle(general, specific, root, ANGLE_EPS) - theta
    to_negative = radial.exterior_angle(general, negative, root, ANGLE_EPS) - theta
    if margin == "inside":
        return torch.relu(to_specific + alpha), torch.relu(-(to_negative + alpha))
    return to_specific.clamp(min=-alpha), (-to_negative).clamp(min=-alpha)


def mined_loss(positive: Tensor, negative: Tensor) -> dict[str, Tensor]:
    """App. B.4's aggregate of per-triplet losses L = positive + negative ((T, B) each): `mean` = L^mean over all
    triplets, and `minimax` = L^(i',j') + L^(i'',j''), the losses of the triplets with the hardest positive (largest
    positive term) and the hardest negative (largest negative term, i.e. smallest Xi_r(e, e'') for RE); a tie goes
    to the first triplet in (tier, item) order, as torch's argmax in the authors' code."""
    positive, negative = positive.reshape(-1), negative.reshape(-1)
    losses = positive + negative
    return {"mean": losses.mean(), "minimax": losses[positive.argmax()] + losses[negative.argmax()]}


def regulariser(current: Tensor, frozen: Tensor, reading: str = "code") -> Tensor:
    """L_reg between fine-tuned and pretrained unit-norm embeddings (N, D) of the same texts: the paper's
    -mean cos (Sec. 6) or the authors' code's (1 - mean cos) / 2 (same optimum, half the gradient)."""
    if reading not in REGULARISERS:
        raise ValueError(f"regulariser reading must be one of {list(REGULARISERS)}; got {reading!r}")
    mean_cos = (current * frozen).sum(dim=-1).mean()
    return -mean_cos if reading == "paper" else (1.0 - mean_cos) / 2.0
