"""Encoders: a timm ViT with a fixed 2-D sin-cos position embedding (or, for MERU Table 5's first rows, a
learned one), and open_clip's text transformer.

Both return un-projected features (the ViT's CLS token, the text transformer's EOT token); the models
own the projections. Architectures come from the config's backbone table, so the same code builds the
paper's ViT-S/16 (MoCo-v3 variant: width 384, 12 heads) and the smoke scale's tiny ViT.
"""

from dataclasses import dataclass

import torch
from open_clip.tokenizer import SimpleTokenizer
from open_clip.transformer import TextTransformer
from timm.models.vision_transformer import VisionTransformer
from torch import nn

from hypvl.errors import InputError
from hypvl.methods import POS_EMBEDS


@dataclass(frozen=True)
class VitConfig:
    """A ViT: input size, patch size, width, depth and heads."""

    image_size: int
    patch: int
    width: int
    depth: int
    heads: int


@dataclass(frozen=True)
class TextConfig:
    """A CLIP text transformer: context length, vocabulary, width, depth and heads."""

    context_length: int = 77
    vocab_size: int = 49408
    width: int = 512
    layers: int = 12
    heads: int = 8


def sincos_2d_position_embedding(grid: int, width: int, temperature: float = 10000.0) -> torch.Tensor:
    """(grid*grid, width) fixed sin-cos embedding of the patches in timm's order (row-major), as MERU builds it
    (after MoCo v3): [sin(row w), cos(row w), sin(col w), cos(col w)] for w = temperature^(-k/(width/4)).

    MERU meshes its grid with `meshgrid` in 'ij' order, so the first half of the features encodes the patch's
    row (the index along the first grid axis) and the second half its column."""
    if width % 4:
        raise ValueError(f"ViT width {width} must be divisible by 4 for a 2-D sin-cos embedding")
    rows, cols = torch.meshgrid(torch.arange(grid, dtype=torch.float32), torch.arange(grid, dtype=torch.float32),
                                indexing="ij")
    quarter = width // 4
    omega = 1.0 / temperature ** (torch.arange(quarter, dtype=torch.float32) / quarter)
    out_rows = rows.flatten()[:, None] * omega[None]
    out_cols = cols.flatten()[:, None] * omega[None]
    return torch.cat([out_rows.sin(), out_rows.cos(), out_cols.sin(), out_cols.cos()], dim=1)


class ImageEncoder(nn.Module):
    """timm ViT with CLS pooling; images in, (B, width) out.

    pos_embed: `sincos` (MERU's recipe) fixes the position embedding to the 2-D sin-cos one (zeros for the
    CLS token) and freezes it; `learned` keeps timm's trainable one, initialised as timm and CLIP/SLIP do
    (truncated normal, std 0.02), as MERU Table 5's first CLIP baselines train it.
    """

    def __init__(self, cfg: VitConfig, pos_embed: str = "sincos"):
        super().__init__()
        if pos_embed not in POS_EMBEDS:
            raise InputError(f"ViT: pos_embed {pos_embed!r} is not one of {', '.join(POS_EMBEDS)}")
        self.vit = VisionTransformer(img_size=cfg.image_size, patch_size=cfg.patch, embed_dim=cfg.width,
                                     depth=cfg.depth, num_heads=cfg.heads, num_classes=0, global_pool="token",
                                     class_token=True, norm_layer=nn.LayerNorm)
        if pos_embed == "sincos":
            grid = cfg.image_size // cfg.patch
            pos = torch.cat([torch.zeros(1, cfg.width), sincos_2d_position_embedding(grid, cfg.width)])
            with torch.no_grad():
                self.vit.pos_embed.copy_(pos[None])
            self.vit.pos_embed.requires_grad_(False)
        self.width, self.image_size = cfg.width, cfg.image_size

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.vit(images)


@torch.compiler.disable  # a data-dependent length: outside a compiled text encoder's graph, which takes it as input
def longest_text(tokens: torch.Tensor) -> int:
    """The number of leading columns of (B, L) right-padded token ids (padding id 0) that hold any token."""
    used = (tokens != 0).any(dim=0).nonzero()
    return int(used[-1]) + 1 if len(used) else 1


def _causal_hint(module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Forward pre-hook of a text block's `nn.MultiheadAttention`: tells it its mask is the causal one
    (`is_causal`, PyTorch's documented hint), so that attention runs as causal scaled-dot-product attention with no
    mask tensor, which the flash kernels take (open_clip's blocks pass the mask only, which they do not)."""
    return args, {**kwargs, "is_causal": kwargs.get("attn_mask") is not None}


class TextEncoder(nn.Module):
    """open_clip's causal text transformer without its projection; tokens in, (B, width) EOT features out."""

    def __init__(self, cfg: TextConfig):
        super().__init__()
        self.transformer = TextTransformer(context_length=cfg.context_length, vocab_size=cfg.vocab_size,
                                           width=cfg.width, heads=cfg.heads, layers=cfg.layers,
                                           output_dim=None, proj_type="none", pool_type="argmax")
        causal = torch.full((cfg.context_length,) * 2, float("-inf")).triu(1)
        if not torch.equal(self.transformer.attn_mask, causal):  # the hint below holds for this mask only
            raise RuntimeError("open_clip's text transformer no longer builds a causal mask; the causal hint is wrong")
        for block in self.transformer.transformer.resblocks:
            block.attn.register_forward_pre_hook(_causal_hint, with_kwargs=True)
        self.width = cfg.width
        self.context_length = cfg.context_length

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """(B, L) tokens -> (B, width) EOT features, computed on the batch's columns up to its longest text.

        The mask is causal and padding follows every text's EOT, so the trailing all-padding columns cannot
        reach any EOT feature: dropping them gives the same features (up to float rounding) for less work
        (captions are mostly shorter than the context; box phrases much shorter)."""
        return self._run(tokens[:, : longest_text(tokens)])[0]

    def _run(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, L') tokens, L' <= context -> EOT features (B, width) and final-LayerNorm states (B, L', width).

        open_clip's modules, assembled as its `TextTransformer.forward` does; by hand because that forward
        always applies the full-context causal mask, so it cannot run on fewer columns."""
        text, length = self.transformer, tokens.shape[1]
        x = text.token_embedding(tokens) + text.positional_embedding[:length]
        x = text.ln_final(text.transformer(x, attn_mask=text.attn_mask[:length, :length]))
        return x[torch.arange(len(x)), tokens.argmax(dim=-1)], x

    def token_states(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(B, L) tokens -> the EOT features (B, width) and, per token (B, L, width), the *initial* state (the
        context-free input of the first attention block: token plus position embedding) and the *contextual*
        state (the last block's output), both through the final LayerNorm like the EOT features, so that the
        model's projection applies to all three (syntax-preserving MERU's e^init and e^cont)."""
        pooled, contextual = self._run(tokens)
        text = self.transformer
        initial = text.ln_final(text.token_embedding(tokens) + text.positional_embedding[: tokens.shape[1]])
        return pooled, initial, contextual


class Tokenizer:
    """CLIP's BPE tokenizer (lower-cased, SOT/EOT); texts longer than the context keep their EOT."""

    def __init__(self, context_length: int):
        self._tok = SimpleTokenizer(context_length=context_length)
        self.context_length = context_length

    def __call__(self, texts: list[str]) -> torch.Tensor:
        return self._tok(list(texts))

    def word_positions(self, text: str, words: list[str]) -> list[list[int]]:
        """Positions, in `self([text])[0]`, of the BPE tokens of each word of `text` (e.g. the tokens of a
        dependency parse, in order): the tokens of every BPE piece that overlaps the word's characters.

        Words are found in order in the tokenizer's cleaned (lower-cased, whitespace-collapsed) text; a word
        that cannot be found there, or whose tokens all fall past the context (truncated captions), gets none.
        Written by hand: open_clip's tokenizer returns ids only, with no offsets to align words with.
        """
        tok = self._tok
        clean = tok.clean_fn(text)
        spans, position = [], 1  # position 0 holds the start-of-text token
        for piece in tok.pat.finditer(clean):
            count = len(tok.bpe("".join(tok.byte_encoder[b] for b in piece.group().encode("utf-8"))).split(" "))
            spans.append((piece.start(), piece.end(), range(position, position + count)))
            position += count
        last = tok.context_length - 1  # truncation puts the end-of-text token here
        out, cursor = [], 0
        for word in words:
            target = tok.clean_fn(word)
            start = clean.find(target, cursor) if target else -1
            if start < 0:
                out.append([])
                continue
            end = cursor = start + len(target)
            out.append([p for lo, hi, positions in spans if lo < end and hi > start for p in positions if p < last])
        return out
