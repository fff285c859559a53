"""Syntax-preserving MERU: word-token alignment, syntax targets from a hand-written parse, the syntax loss
against the hyperbolic law of cosines in float64, and the model's gradients and batches."""

from __future__ import annotations

import math

import pytest
import torch
from PIL import Image

from helpers.models import TINY, _batch, _model
from helpers.training import TRAIN_CFG
from hypvl.data.formats.grounded import GroundedRecord, write_grounded_shards
from hypvl.data.formats.images import encode_image
from hypvl.errors import InputError
from hypvl.geometry import lorentz
from hypvl.losses.syntax import syntax_loss
from hypvl.models.encoders import Tokenizer
from hypvl.train.data import TrainingStream
from hypvl.train.syntax import collate_syntax, syntax_targets
from hypvl.train.trainer import train

# "Two cats chase a dog." parsed by hand (spaCy's conventions: the root is its own head)
PARSE = {"tokens": ["Two", "cats", "chase", "a", "dog", "."], "idx": [0, 4, 9, 15, 17, 20],
         "heads": [1, 2, 2, 4, 2, 2], "deps": ["nummod", "nsubj", "ROOT", "det", "dobj", "punct"],
         "pos": ["NUM", "NOUN", "VERB", "DET", "NOUN", "PUNCT"]}
CAPTION = "Two cats chase a dog."


def test_word_positions_point_at_each_words_tokens():
    tok = Tokenizer(77)
    ids = tok([CAPTION])[0]
    positions = tok.word_positions(CAPTION, PARSE["tokens"])
    assert positions == [[1], [2], [3], [4], [5], [6]]
    decode = tok._tok.decode
    assert [decode([int(ids[p]) for p in ps]).strip() for ps in positions] == ["two", "cats", "chase", "a", "dog", "."]
    # a word split into several BPE tokens gets all of them; a word not in the text gets none
    long_word = tok.word_positions("an antidisestablishmentarianism here", ["an", "antidisestablishmentarianism",
                                                                             "here", "absent"])
    assert len(long_word[1]) > 1 and long_word[2] == [long_word[1][-1] + 1] and long_word[3] == []
    # past the context: the last slot holds the end-of-text token, later words get nothing
    short = Tokenizer(5)
    assert short.word_positions(CAPTION, PARSE["tokens"]) == [[1], [2], [3], [], [], []]


def test_targets_of_a_hand_written_parse():
    positions = [[1], [2], [3], [4], [5], [6]]
    got = syntax_targets(PARSE, positions, context_length=9)
    # the full stop is punctuation: 5 words; edges (parent, child): cats->two, chase->cats, dog->a, chase->dog
    assert got.word_of_token.tolist() == [-1, 0, 1, 2, 3, 4, -1, -1, -1]
    assert got.edges.tolist() == [[1, 0], [2, 1], [4, 3], [2, 4]] and got.words == 5
    # a token two words share goes to the first; a word left with none drops out with its edges
    shared = syntax_targets(PARSE, [[1], [1], [2], [3], [4], [5]], context_length=9)
    assert shared.word_of_token.tolist()[:6] == [-1, 0, 1, 2, 3, -1] and shared.words == 4
    assert shared.edges.tolist() == [[3, 2], [1, 3]]  # two(0) chase(1) a(2) dog(3): both edges of cats are gone


def test_collate_numbers_words_across_the_batch():
    a = syntax_targets(PARSE, [[1], [2], [3], [4], [5], [6]], 9)
    b = syntax_targets(PARSE, [[1], [2], [3], [], [], []], 9)  # truncated: two, cats, chase
    batch = collate_syntax([a, b])
    assert batch["word_of_token"][1].tolist() == [-1, 5, 6, 7, -1, -1, -1, -1, -1]
    assert batch["syntax_edges"].tolist() == [[1, 0], [2, 1], [4, 3], [2, 4], [6, 5], [7, 6]]


def _exterior_angle(x, y, c):
    """pi minus the angle at x of the geodesic triangle (O, x, y), by the hyperbolic law of cosines."""
    def dist(p, q):
        return lorentz.pairwise_dist(p[None], q[None], c)[0, 0].item() * math.sqrt(c)
    origin = torch.zeros_like(x)
    a, b, opposite = dist(origin, x), dist(x, y), dist(origin, y)
    cos_x = (math.cosh(a) * math.cosh(b) - math.cosh(opposite)) / (math.sinh(a) * math.sinh(b))
    return math.pi - math.acos(cos_x)


def _residual(general, specific, c, k=0.1):
    aperture = math.asin(min(1.0, 2 * k / (math.sqrt(c) * general.norm().item())))
    return max(0.0, _exterior_angle(general, specific, c) - aperture)


def test_syntax_loss_is_the_mean_of_edge_and_word_cone_terms_in_2d():
    c = 1.3
    cont = torch.tensor([[1.5, 0.2], [0.3, 1.1], [2.0, 2.5]], dtype=torch.float64)
    init = torch.tensor([[0.4, 0.1], [0.05, 1.9], [0.9, 0.8]], dtype=torch.float64)
    edges = torch.tensor([[0, 1], [2, 0]])  # (parent, child): word 1 is a child of word 0, word 0 of word 2
    terms = [_residual(cont[1], cont[0], c), _residual(cont[0], cont[2], c),  # child's cone holds the parent
             *(_residual(init[w], cont[w], c) for w in range(3))]  # a word's initial cone holds its contextual
    assert sum(t > 0 for t in terms) >= 2 and min(terms) == 0.0  # the case exercises both sides of the hinge
    assert syntax_loss(init, cont, edges, c).item() == pytest.approx(sum(terms) / 5, abs=1e-7)
    assert syntax_loss(init[:0], cont[:0], edges[:0], c).item() == 0.0


def _syntax_batch():
    batch = _batch()
    targets = [syntax_targets(PARSE, [[1], [2], [3], [4], [5], [6]], 12),
               syntax_targets(PARSE, [[2], [3], [4], [5], [], []], 12),
               syntax_targets(PARSE, [[1, 2], [3], [4], [5], [6], [7]], 12),
               syntax_targets(PARSE, [[], [], [], [], [], []], 12)]
    return {**batch, **collate_syntax(targets)}


def test_word_embeddings_are_token_means_lifted_like_captions():
    model, batch = _model("syntax_meru"), _syntax_batch()
    _, initial, contextual = model.textual.token_states(batch["tokens"])
    words = model.embed_words(model.word_states(contextual, batch["word_of_token"]))
    expected = []
    for w in range(int(batch["word_of_token"].max()) + 1):
        rows, cols = (batch["word_of_token"] == w).nonzero(as_tuple=True)
        expected.append(contextual[rows, cols].mean(0))
    torch.testing.assert_close(words, model.embed_text(model.textual_proj(torch.stack(expected))))
    assert len(words) == 5 + 4 + 5 + 0
    # the initial state of a token ignores its context; the contextual state sees the tokens before it
    other = batch["tokens"].clone()
    other[:, 4] = (other[:, 4] + 7) % 400 + 1
    _, initial2, contextual2 = model.textual.token_states(other)
    assert torch.equal(initial[:, 5], initial2[:, 5]) and not torch.allclose(contextual[:, 5], contextual2[:, 5])
    assert torch.equal(contextual[:, 3], contextual2[:, 3])
    torch.testing.assert_close(model.textual.token_states(batch["tokens"])[0], model.textual(batch["tokens"]))


def test_syntax_weight_adds_the_syntax_term_and_its_gradients_reach_only_the_text_side():
    batch = _syntax_batch()
    with_syntax, without = _model("syntax_meru", syntax_weight=0.5), _model("syntax_meru", syntax_weight=0.0)
    terms, base = with_syntax.loss(batch), without.loss(batch)
    assert terms["syntax"].item() > 0
    assert terms["loss"].item() == pytest.approx(base["loss"].item() + 0.5 * terms["syntax"].item(), rel=1e-6)
    terms["loss"].backward()
    base["loss"].backward()
    grads = {name: p.grad for name, p in with_syntax.named_parameters()}
    moved = {name for name, p in without.named_parameters()
             if p.grad is not None and not torch.equal(p.grad, grads[name])}
    assert "textual_proj.weight" in moved and "textual_alpha" in moved and "curv" in moved
    assert "textual.transformer.token_embedding.weight" in moved
    assert not any(name.startswith(("visual", "logit_scale")) for name in moved)
    # MERU's loss is unchanged: the same model with weight 0 is MERU on the same batch
    meru = _model("meru")
    assert base["loss"].item() == pytest.approx(meru.loss(batch)["loss"].item(), rel=1e-6)


def _parsed_shards(folder, parse=True):
    records = [GroundedRecord(f"k{i:03d}", encode_image(Image.new("RGB", (24, 24), (i * 30, 0, 0))), CAPTION, [],
                              parse=PARSE if parse else None) for i in range(6)]
    return write_grounded_shards(records, folder, shard_size=3)


def test_stream_carries_the_parses_and_refuses_shards_without(tmp_path):
    shards = _parsed_shards(tmp_path / "parsed")
    stream = TrainingStream(shards, Tokenizer(12), 16, 3, "pairs", seed=0, shuffle_buffer=2, syntax=True)
    batch = next(iter(stream))
    assert batch["word_of_token"].tolist() == [[-1, *range(w, w + 5), -1, -1, -1, -1, -1, -1] for w in (0, 5, 10)]
    assert len(batch["syntax_edges"]) == 12
    bare = _parsed_shards(tmp_path / "bare", parse=False)
    with pytest.raises(InputError, match=r"bare/.*-000000\.tar: sample 'k000' has no dependency parse"):
        TrainingStream(bare, Tokenizer(12), 16, 3, "pairs", seed=0, syntax=True)


def test_training_syntax_meru_logs_the_syntax_term_and_refuses_boxes(tmp_path):
    shards = _parsed_shards(tmp_path / "data")
    exp = {"id": "syn", "method": "syntax_meru", "backbone": "vit_s16", "seed": 0}
    summary = train(exp, TINY, TRAIN_CFG, shards, tmp_path / "out", progress=False)
    assert summary["final"]["syntax"] > 0
    assert (tmp_path / "out" / "train_log.csv").read_text().startswith("step,loss,contrastive,entailment,syntax")
    with pytest.raises(InputError, match="'syn_boxes'.*takes no boxes"):
        train({**exp, "id": "syn_boxes", "boxes": True}, TINY, TRAIN_CFG, shards, tmp_path / "x", progress=False)
    assert not (tmp_path / "x").exists()
