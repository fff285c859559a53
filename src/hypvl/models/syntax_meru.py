"""Syntax-preserving MERU (Ohara et al.): MERU plus mu * the syntax loss over each caption's dependency parse.

Words are embedded like captions: a word's token states (the mean over its BPE tokens) go through the text
projection, the text scale factor and the exponential map. The batch carries, besides MERU's images and
tokens, `word_of_token` (B, L): the batch-wide index of the word each token belongs to, -1 for none, and
`syntax_edges` (E, 2): (parent, child) word indices (built by `hypvl.train.syntax`).
"""

import torch

from hypvl.losses.syntax import syntax_loss

from .meru import MERU


class SyntaxMERU(MERU):
    """Eq. 1: L_cont + lambda L_entail + mu L_syntax, with mu = `syntax_weight`."""

    def __init__(self, visual, textual, embed_dim: int, syntax_weight: float = 1.0, **meru_kwargs):
        super().__init__(visual, textual, embed_dim, **meru_kwargs)
        self.syntax_weight = syntax_weight

    def embed_words(self, states: torch.Tensor, word_of_token: torch.Tensor) -> torch.Tensor:
        """(B, L, width) token states -> (W, D) Lorentz points of the W words `word_of_token` names."""
        flat, words = states.reshape(-1, states.shape[-1]), word_of_token.reshape(-1)
        kept = words >= 0
        words = words[kept]
        count = int(words.max()) + 1 if len(words) else 0
        sums = flat.new_zeros(count, flat.shape[1]).index_add_(0, words, flat[kept])
        sizes = torch.bincount(words, minlength=count).clamp(min=1).to(flat.dtype)
        return self.embed_text(self.textual_proj(sums / sizes[:, None]))

    def loss(self, batch: dict) -> dict[str, torch.Tensor]:
        img = self.encode_image(batch["images"])
        pooled, initial, contextual = self.textual.token_states(batch["tokens"])
        terms = self.pair_terms(img, self.embed_text(self.textual_proj(pooled)))
        words = batch["word_of_token"]
        syntax = syntax_loss(self.embed_words(initial, words), self.embed_words(contextual, words),
                             batch["syntax_edges"], self.curvature)
        terms["loss"] = terms["loss"] + self.syntax_weight * syntax
        terms["syntax"] = syntax.detach()
        return terms
