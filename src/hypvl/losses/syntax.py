"""The syntax loss of syntax-preserving hyperbolic VSE (Ohara et al., Eq. 3), on Lorentz points of words.

Both terms are MERU's entailment cone loss: along each dependency edge the child's contextual embedding
entails the parent's (the parent must lie in the child's cone), and each word's initial (context-free)
embedding entails its own contextual embedding. The paper sums over edges, words and the batch; here the
terms are averaged over every edge and word of the batch (MERU's `.mean()` convention for L_ent), so the
weight mu does not scale with caption length or batch size.
"""

from __future__ import annotations

import torch
from torch import Tensor

from hypvl.losses.distributed import global_mean
from hypvl.losses.entailment import entailment_residuals


def syntax_loss(initial: Tensor, contextual: Tensor, edges: Tensor, curv: float | Tensor,
                min_radius: float = 0.1) -> Tensor:
    """Mean of the edge terms l_ent(e_c^cont, e_p^cont) and the word terms l_ent(e_w^init, e_w^cont), over the
    global batch (every rank's words; this rank's share, `global_mean`).

    Args:
        initial: (W, D) space components of every word's initial embedding in the batch.
        contextual: (W, D) the same words' contextual embeddings.
        edges: (E, 2) (parent, child) word indices into the rows above.
        curv: positive c of the curvature -c.
        min_radius: the aperture constant K.
    Returns:
        () loss; zero for a batch with no words.
    """
    parent, child = edges[:, 0], edges[:, 1]
    edge_terms = entailment_residuals(contextual[child], contextual[parent], curv, min_radius=min_radius)
    word_terms = entailment_residuals(initial, contextual, curv, min_radius=min_radius)
    return global_mean(torch.cat([edge_terms, word_terms]))
