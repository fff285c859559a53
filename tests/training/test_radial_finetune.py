"""Text-only Radial Embedding alignment (`hypvl.train.radial`): what trains and what stays bitwise, the triplets and
mining of a batch against a numpy oracle, the roots of Table 3's ablations, and the overrides it refuses."""

from dataclasses import fields

import numpy as np
import pytest
import torch
from PIL import Image

from helpers.radial import CFG, MODEL_CFG, QUIET, ROWS, align, base_checkpoint
from hypvl.config import load_config
from hypvl.data.formats.cc3m import CC3MSample, write_cc3m
from hypvl.data.formats.hierarcaps import write_hierarcaps_train
from hypvl.data.formats.images import encode_image
from hypvl.errors import InputError
from hypvl.evaluate.radial import entailment_root
from hypvl.methods import METHODS, RADIAL_METHOD
from hypvl.models.build import build_model
from hypvl.models.checkpoints import load_checkpoint, save_checkpoint
from hypvl.outside.standins import standin_model
from hypvl.train import radial
from hypvl.train.radial import Root, batch_losses, embed, finetune
from hypvl.train.radial_recipe import RadialRecipe, radial_recipe, radial_schedule
from hypvl.train.trainer import train


def text_names(model) -> set[str]:
    text = {id(p) for p in model.text_parameters()}
    return {name for name, p in model.named_parameters() if id(p) in text}


def test_alignment_changes_the_text_tower_and_leaves_every_other_weight_bitwise(tmp_path):
    base = base_checkpoint(tmp_path)
    before = torch.load(base, weights_only=True)["model"]
    blob = align(tmp_path, base)
    model, recipe = load_checkpoint(tmp_path / "out" / "checkpoint.pt")
    trained = text_names(model)
    assert {"textual_proj.weight", "textual.transformer.token_embedding.weight"} <= trained
    assert not any(name.startswith("visual") for name in trained) and "logit_scale" not in trained
    changed = {key for key, value in blob["model"].items() if not torch.equal(value, before[key])}
    assert changed == trained  # every text parameter moved; every image-side weight, scalar and buffer did not
    assert recipe["experiment"] == "ft" and recipe["method"] == "clip"  # the base's architecture rebuilds
    assert recipe["fine_tuning"]["overrides"]["base"] == "base" and blob["step"] == 3  # ceil(5 rows / 2)
    assert "radial_root" not in blob and getattr(model, "radial_root", None) is None


def test_alignment_is_reproducible_for_a_seed_and_the_seed_orders_the_batches(tmp_path):
    base = base_checkpoint(tmp_path)
    runs = [align(tmp_path, base, seed, out=f"run{i}")["model"] for i, seed in enumerate((0, 0, 1))]
    assert all(torch.equal(runs[0][key], runs[1][key]) for key in runs[0])
    assert not torch.equal(runs[0]["textual_proj.weight"], runs[2]["textual_proj.weight"])


def test_the_aligned_model_trains_in_train_mode_so_aligns_bert_drops_out(tmp_path, monkeypatch):
    """The authors' train.py calls .train() on the model it aligns: ALIGN's BERT (dropout 0.1) drops out, so two
    copies of one text embed differently during alignment; the pretrained reference of L_reg stays in eval mode."""
    model = standin_model("align", MODEL_CFG, "vit_s16", [text for row in ROWS for text in (*row.positive, *row.negative)])
    assert model.model.config.text_config.hidden_dropout_prob > 0
    base = tmp_path / "align.pt"
    save_checkpoint(base, model, {**model.recipe(), "experiment": "base"}, step=0)
    seen = []

    def spy(recipe, aligned, frozen, rows, device, **kwargs):
        with torch.no_grad():
            first, second = embed(aligned, [rows[0].positive[0]] * 2, device)
        seen.append((aligned.training, frozen.training, not torch.equal(first, second)))
        return batch_losses(recipe, aligned, frozen, rows, device, **kwargs)

    monkeypatch.setattr(radial, "batch_losses", spy)
    runs = [align(tmp_path, base, out=f"run{i}")["model"] for i in range(2)]
    assert seen == [(True, False, True)] * 6  # 3 steps a run
    assert all(torch.equal(runs[0][key], runs[1][key]) for key in runs[0])  # the seed fixes dropout's draws too


def test_the_clip_objective_trains_the_text_tower_on_the_rows_with_an_image(tmp_path):
    """Table 3 "FT with CLIP objective": images found by tier-4 caption in CC3M shards; a row without one is left
    out; the image side stays bitwise."""
    rng = np.random.default_rng(0)
    pictures = [Image.fromarray(rng.integers(0, 255, (40, 48, 3), dtype=np.uint8)) for _ in ROWS]
    shards = tmp_path / "cc3m"
    shards.mkdir()
    samples = [CC3MSample(f"{i:05d}", encode_image(picture), row.positive[-1] + "  ")  # captions are stripped
               for i, (row, picture) in enumerate(zip(ROWS[1:], pictures))]
    write_cc3m(shards / "00000.tar", [CC3MSample("other", samples[0].image, "a caption of no row"), *samples])
    base = base_checkpoint(tmp_path)
    before = torch.load(base, weights_only=True)["model"]
    csv = tmp_path / "train.csv"
    write_hierarcaps_train(csv, ROWS)
    experiment = {"id": "ft", "method": "radial_ft", "overrides": {"base": "base", "batch_size": 2, "objective": "clip"}}
    summary = finetune(experiment, base, csv, CFG, tmp_path / "out", QUIET, progress=False, images=shards)
    assert summary["items"] == 4 and summary["rows_without_image"] == 1 and summary["schedule"]["steps"] == 2
    assert summary["final"]["contrastive"] > 0 and "re_mean" not in summary["final"]
    after = torch.load(tmp_path / "out" / "checkpoint.pt", weights_only=True)["model"]
    model, _ = load_checkpoint(tmp_path / "out" / "checkpoint.pt")
    assert {key for key in after if not torch.equal(after[key], before[key])} == text_names(model)
    write_cc3m(shards / "00000.tar", [CC3MSample("other", samples[0].image, "a caption of no row")])
    with pytest.raises(InputError, match=r"cc3m: no caption there is the last positive level of a HierarCaps"):
        finetune(experiment, base, csv, CFG, tmp_path / "none", QUIET, progress=False, images=shards)


def test_meru_exposes_its_text_scale_and_a_hyperbolic_base_is_refused(tmp_path):
    meru = build_model("meru", "vit_s16", MODEL_CFG)
    assert "textual_alpha" in text_names(meru) and "visual_alpha" not in text_names(meru)
    assert meru.tokenizer(["a dog"]).shape == (1, MODEL_CFG["text"]["context_length"])
    assert meru.image_size == MODEL_CFG["image_size"]
    with pytest.raises(InputError, match=r"meru\.pt: radial_ft aligns Euclidean dual encoders.*lorentz"):
        align(tmp_path, base_checkpoint(tmp_path, "meru"))


def test_learning_only_the_root_keeps_the_model_and_evaluation_uses_the_learned_root(tmp_path):
    base = base_checkpoint(tmp_path)
    before = torch.load(base, weights_only=True)["model"]
    blob = align(tmp_path, base, train_only_root=True)
    assert all(torch.equal(value, before[key]) for key, value in blob["model"].items())
    model, _ = load_checkpoint(tmp_path / "out" / "checkpoint.pt")
    empty = model.encode_text(model.tokenizer([""]))[0]
    root = entailment_root(model, model.tokenizer)
    assert torch.equal(root, blob["radial_root"]) and torch.linalg.vector_norm(root).item() == pytest.approx(1.0)
    assert not torch.allclose(root, empty)


def test_a_fixed_root_is_stored_only_where_evaluation_is_to_use_it(tmp_path):
    base = base_checkpoint(tmp_path)
    origin = align(tmp_path, base, root="fixed_origin", eval_root="training")
    assert torch.equal(origin["radial_root"], torch.zeros(MODEL_CFG["embed_dim"]))
    assert "radial_root" not in align(tmp_path, base, out="empty", root="fixed_empty")


class TableModel(torch.nn.Module):
    """A text tower that embeds each known text as a fixed vector (normalised by embed_text, as CLIP's)."""

    geometry = "euclidean"

    def __init__(self, vectors: dict[str, np.ndarray]):
        super().__init__()
        self.texts = list(vectors)
        self.table = torch.nn.Parameter(torch.tensor(np.array(list(vectors.values()))))

    def tokenizer(self, texts):
        return torch.tensor([[self.texts.index(text)] for text in texts])

    def text_features(self, tokens):
        return self.table[tokens[:, 0]]

    def embed_text(self, feats):
        return torch.nn.functional.normalize(feats, dim=-1)


def xi(e, f, r) -> float:
    """The exterior angle by numpy: pi minus the angle at e of the triangle (r, e, f)."""
    a, b = e - r, f - e
    return float(np.arccos(np.clip(a @ b / np.linalg.norm(a) / np.linalg.norm(b), -1, 1)))


@pytest.mark.parametrize("drop, triplets", [((), [(0, 1, 0), (1, 2, 1), (2, 3, 2)]), ((2,), [(0, 2, 0), (2, 3, 2)])])
def test_a_batch_forms_its_tier_triplets_and_mines_them_as_the_paper(drop, triplets):
    rng = np.random.default_rng(1)
    vectors = {text: rng.normal(size=3) for row in ROWS for text in (*row.positive, *row.negative)}
    vectors[""] = rng.normal(size=3)
    unit = {text: v / np.linalg.norm(v) for text, v in vectors.items()}
    model = TableModel(vectors).double()
    recipe = radial_recipe({"id": "x", "method": "radial_ft",
                            "overrides": {"base": "b", "lambda_reg": 0.0, "drop_tiers": list(drop)}})
    root = Root(recipe, model, ROWS, torch.device("cpu"))()
    np.testing.assert_allclose(root.detach().numpy(), unit[""])
    rows = ROWS[:3]
    terms = batch_losses(recipe, model, None, rows, torch.device("cpu"), root=root)
    r = unit[""]
    pos = np.array([[xi(unit[row.positive[g]], unit[row.positive[s]], r) for row in rows] for g, s, _ in triplets])
    neg = np.array([[xi(unit[row.positive[g]], unit[row.negative[n]], r) for row in rows] for g, _, n in triplets])
    losses = (pos - neg).ravel()
    minimax = losses[pos.ravel().argmax()] + losses[neg.ravel().argmin()]
    assert terms["re_mean"].item() == pytest.approx(losses.mean(), abs=1e-6)
    assert terms["re_minimax"].item() == pytest.approx(minimax, abs=1e-6)
    assert terms["loss"].item() == pytest.approx(losses.mean() + minimax, abs=1e-6)
    no_negatives = batch_losses(radial_recipe({"id": "x", "method": "radial_ft", "overrides": {
        "base": "b", "lambda_reg": 0.0, "drop_tiers": list(drop), "negatives": False}}), model, None, rows,
        torch.device("cpu"), root=root)
    assert no_negatives["re_mean"].item() == pytest.approx(pos.mean(), abs=1e-6)
    assert no_negatives["re_minimax"].item() == pytest.approx(pos.max() + pos.ravel()[0], abs=1e-6)


def test_the_fixed_mean_root_is_the_normalised_mean_of_every_train_text():
    rng = np.random.default_rng(2)
    texts = [text for row in ROWS for text in (*row.positive, *row.negative)]
    vectors = {text: rng.normal(size=4) for text in [*dict.fromkeys(texts), ""]}
    model = TableModel(vectors).double()
    recipe = radial_recipe({"id": "x", "method": "radial_ft", "overrides": {"base": "b", "root": "fixed_mean"}})
    mean = sum(vectors[text] / np.linalg.norm(vectors[text]) for text in texts)  # repeats counted ("an animal" x5)
    np.testing.assert_allclose(Root(recipe, model, ROWS, torch.device("cpu"))().numpy(), mean / np.linalg.norm(mean))


def test_hypvl_train_sends_an_alignment_to_hypvl_finetune(tmp_path):
    with pytest.raises(InputError, match=r"experiment 'x' aligns another experiment's model .*hypvl finetune"):
        train({"id": "x", "method": "radial_ft", "overrides": {"base": "b"}}, MODEL_CFG, load_config()["train"], [],
              tmp_path)


def test_planning_knows_every_override_the_fine_tuner_reads():
    assert set(METHODS[RADIAL_METHOD].overrides) == {field.name for field in fields(RadialRecipe)}


def test_the_paper_schedule_and_its_smoke_mapping():
    paper = radial_recipe({"id": "x", "method": "radial_ft", "overrides": {"base": "b"}})
    assert (paper.epochs, paper.batch_size, paper.lr, paper.lambda_re, paper.lambda_reg) == (1, 8, 1e-7, 1.0, 10.0)
    assert (paper.regulariser, paper.root, paper.objective, paper.ec_margin) == ("code", "learned", "radial", "outside")
    assert radial_schedule(paper, {"epochs": None, "lr_scale": 1.0}) == (1, 1e-7)
    assert radial_schedule(paper, load_config()["radial_ft"]) == (8, pytest.approx(1e-5))


@pytest.mark.parametrize("overrides, message", [
    ({"rooot": "fixed_mean"}, r"method 'radial_ft' does not support the overrides \['rooot'\]"),
    ({"root": "fixed_middle"}, r"override root must be one of \['learned', 'fixed_mean', .*got 'fixed_middle'"),
    ({"drop_tiers": [1, 2, 3]}, r"override drop_tiers must keep at least 2 tiers"),
    ({"drop_tiers": [5]}, r"override drop_tiers must be a list of distinct tiers 1-4"),
    ({"lr": 0}, r"override lr must be positive"),
    ({"epochs": 1.5}, r"override epochs must be a whole number"),
    ({"negatives": "no"}, r"override negatives must be true or false"),
    ({"ec_alpha": 0.5}, r"overrides ec_alpha, ec_epsilon and ec_margin apply only to objective entailment_cone"),
    ({"eval_root": "training"}, r"eval_root applies only to a fixed root"),
    ({"root": "fixed_origin", "train_only_root": True}, r"train_only_root learns the root"),
])
def test_a_bad_override_is_named(overrides, message):
    with pytest.raises(InputError, match=r"experiment 'x': " + message):
        radial_recipe({"id": "x", "method": "radial_ft", "overrides": {"base": "b", **overrides}})
    with pytest.raises(InputError, match=r"experiment 'x': radial_ft needs the override `base`"):
        radial_recipe({"id": "x", "method": "radial_ft", "overrides": {}})
