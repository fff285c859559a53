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

    encoded_fields = ("images", "tokens", "word_of_token")

    def __init__(self, visual, textual, embed_dim: int, syntax_weight: float = 1.0, **meru_kwargs):
        super().__init__(visual, textual, embed_dim, **meru_kwargs)
        self.syntax_weight = syntax_weight

    @staticmethod
    def word_states(states: torch.Tensor, word_of_token: torch.Tensor) -> torch.Tensor:
        """(B, L, width) token states -> (W, width): the mean state of each of the W words `word_of_token` names,
        numbered from its first word (a micro-batch's words keep the batch's order, after the previous one's)."""
        flat, words = states.reshape(-1, states.shape[-1]), word_of_token.reshape(-1)
        kept = words >= 0
        words = words[kept]
        if len(words):
            words = words - words.min()
        count = int(words.max()) + 1 if len(words) else 0
        sums = flat.new_zeros(count, flat.shape[1]).index_add_(0, words, flat[kept])
        sizes = torch.bincount(words, minlength=count).clamp(min=1).to(flat.dtype)
        return sums / sizes[:, None]

    def embed_words(self, word_states: torch.Tensor) -> torch.Tensor:
        """(W, width) word states -> (W, D) Lorentz points, lifted like captions."""
        return self.embed_text(self.textual_proj(word_states))

    def features(self, batch: dict) -> dict[str, torch.Tensor]:
        """MERU's image and caption embeddings, and each word's initial and contextual states (a row per word, in
        the batch's word order; the loss projects and lifts them)."""
        img = self.encode_image(batch["images"])
        pooled, initial, contextual = self.textual.token_states(batch["tokens"])
        words = batch["word_of_token"]
        return {"images": img, "texts": self.embed_text(self.textual_proj(pooled)),
                "word_initial": self.word_states(initial, words),
                "word_contextual": self.word_states(contextual, words)}

    def loss_of(self, features: dict[str, torch.Tensor], batch: dict) -> dict[str, torch.Tensor]:
        terms = super().loss_of(features, batch)
        syntax = syntax_loss(self.embed_words(features["word_initial"]), self.embed_words(features["word_contextual"]),
                             batch["syntax_edges"], self.curvature)
        terms["loss"] = terms["loss"] + self.syntax_weight * syntax
        terms["syntax"] = syntax.detach()
        return terms
