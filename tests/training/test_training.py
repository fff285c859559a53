"""Training: optimiser groups, schedule, the recipe's readings per paper, reproducibility, encoder initialisation."""

import math

import pytest
import torch
from PIL import Image
from torchvision.transforms import CenterCrop, Compose, InterpolationMode, Resize

from helpers import REPO
from helpers.models import TINY, _model
from helpers.training import TRAIN_CFG, _shards
from hypvl.data.transforms import resize_center_crop
from hypvl.errors import InputError
from hypvl.spec.load import load_spec
from hypvl.train.optim import param_groups, warmup_cosine
from hypvl.train.recipe import check_recipe, image_view, resolve_schedule, subreddit_prefix
from hypvl.train.trainer import train


@pytest.mark.parametrize("method", ["clip", "meru", "hycoclip", "poinclip", "syntax_meru"])
def test_weight_decay_spares_the_scalars_or_also_gains_and_biases(method):
    model = _model(method)
    trainable = {id(p) for p in model.parameters() if p.requires_grad}
    for no_weight_decay, spared in [
        ("scalars", {id(getattr(model, name)) for name in model.scalar_names}),  # the public MERU/HyCoCLIP code
        ("gains_biases_scalars", {id(p) for p in model.parameters() if p.requires_grad and p.ndim <= 1}),  # the text
    ]:
        decay, no_decay = param_groups(model, 0.2, no_weight_decay)
        assert decay["weight_decay"] == 0.2 and no_decay["weight_decay"] == 0.0
        decayed, not_decayed = [{id(p) for p in group["params"]} for group in (decay, no_decay)]
        assert not_decayed == spared and decayed == trainable - spared
        assert len(decay["params"]) + len(no_decay["params"]) == len(trainable)  # each parameter once
    named = dict(model.named_parameters())
    decayed = {id(p) for p in param_groups(model, 0.2)[0]["params"]}
    assert id(named["visual.vit.blocks.0.norm1.weight"]) in decayed and id(named["visual_proj.weight"]) in decayed
    with pytest.raises(ValueError, match="no_weight_decay must be one of"):
        param_groups(model, 0.2, "biases")


def _meru_lr_multiplier(step: int, warmup: int, total: int) -> float:
    """MERU's LinearWarmupCosineDecayLR (meru/optim.py) as written there: step / warmup, then cos^2."""
    if step < warmup:
        return step / max(1, warmup)
    return max(0.0, math.cos((step - warmup) / (total - warmup) * math.pi / 2) ** 2)


def test_warmup_from_zero_then_cosine_to_zero_as_meru():
    assert warmup_cosine(0, 10, 100) == 0.0  # the first step trains at learning rate 0
    assert warmup_cosine(5, 10, 100) == pytest.approx(0.5) and warmup_cosine(10, 10, 100) == pytest.approx(1.0)
    assert warmup_cosine(100, 10, 100) == pytest.approx(0.0, abs=1e-12)
    for warmup, total in [(10, 100), (4, 500), (4000, 120000), (1, 3)]:
        for step in {*range(0, total + 1, max(1, total // 97)), warmup - 1, warmup, total}:
            assert warmup_cosine(step, warmup, total) == pytest.approx(_meru_lr_multiplier(step, warmup, total),
                                                                      abs=1e-12)


def test_schedule_maps_paper_settings_to_the_scale():
    schedule = resolve_schedule({"steps": 40000, "batch_size": 1536}, {**TRAIN_CFG, "batch_size_scale": 1 / 12})
    assert (schedule.steps, schedule.batch_size) == (3, 128)
    assert schedule.warmup == 1  # 4000 / 40000 of 3 steps, at least one
    full = resolve_schedule({"steps": 40000}, {**TRAIN_CFG, "steps": None, "batch_size_scale": 1.0})
    assert (full.steps, full.batch_size, full.warmup) == (40000, 768, 4000)


def test_training_is_bitwise_reproducible(tmp_path):
    shards = _shards(tmp_path / "data")
    exp = {"id": "t", "method": "hycoclip", "backbone": "vit_s16", "seed": 0}
    a = train(exp, TINY, TRAIN_CFG, shards, tmp_path / "a", progress=False)
    b = train(exp, TINY, TRAIN_CFG, shards, tmp_path / "b", progress=False)
    c = train({**exp, "seed": 1}, TINY, TRAIN_CFG, shards, tmp_path / "c", progress=False)
    sa, sb, sc = (torch.load(tmp_path / x / "checkpoint.pt", weights_only=True)["model"] for x in "abc")
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)
    assert a["final"] == b["final"]
    log = (tmp_path / "a" / "train_log.csv").read_text().splitlines()
    assert log[0].startswith("step,loss,contrastive,entailment") and len(log) == 4
    assert float(log[1].split(",")[5]) == 0.0  # the first step trains at learning rate 0 (warm-up from 0)


def test_poinclip_grid_reads_6k_steps_of_their_own_or_the_first_6k_of_120k(tmp_path):
    """PoinCLIP Table 4 trains "1 epoch (6K iterations)" without saying the schedule: the default reading is a 6k
    schedule (4k warm-up, cosine to 0 at 6k); `schedule_steps: 120000` reads it as the first 6k steps of the 120k
    schedule (4k warm-up, the learning rate still near its peak at 6k), at any scale."""
    own = resolve_schedule({"steps": 6000}, {**TRAIN_CFG, "steps": None})
    first = resolve_schedule({"steps": 6000, "schedule_steps": 120000}, {**TRAIN_CFG, "steps": None})
    assert (own.steps, own.warmup, own.schedule_steps) == (6000, 4000, 6000)
    assert (first.steps, first.warmup, first.schedule_steps) == (6000, 4000, 120000)
    smoke = resolve_schedule({"steps": 6000, "schedule_steps": 120000}, {**TRAIN_CFG, "steps": 100})
    assert (smoke.steps, smoke.warmup, smoke.schedule_steps) == (100, 67, 2000)
    shards = _shards(tmp_path / "data")
    last_lr = {}
    for name, overrides in (("own", {"steps": 6000}), ("first", {"steps": 6000, "schedule_steps": 120000})):
        train({"id": name, "method": "clip", "backbone": "vit_s16", "overrides": overrides}, TINY,
              {**TRAIN_CFG, "steps": 6}, shards, tmp_path / name, progress=False)
        last_lr[name] = float((tmp_path / name / "train_log.csv").read_text().splitlines()[-1].split(",")[5])
    # the last of 6 steps: half-way down the cosine after a 4-step warm-up; 1 step of 116 down the long one
    assert last_lr["own"] == pytest.approx(0.5 * TRAIN_CFG["lr"]) and last_lr["first"] > 0.99 * TRAIN_CFG["lr"]
    with pytest.raises(InputError, match="override schedule_steps 5000 needs the run's own `steps`, at most"):
        check_recipe({"id": "g", "method": "poinclip", "overrides": {"steps": 6000, "schedule_steps": 5000}})


def test_steps_for_reaches_the_trainer(tmp_path):
    """`train.steps_for` (id glob -> steps): the last matching entry sets the steps, others keep `train.steps`."""
    shards = _shards(tmp_path / "data")
    cfg = {**TRAIN_CFG, "steps_for": {"grid_*": 5, "grid_b*": 2, "other": 7}}
    for experiment, steps in (("grid_a", 5), ("grid_b1", 2), ("plain", TRAIN_CFG["steps"])):
        summary = train({"id": experiment, "method": "clip", "backbone": "vit_s16"}, TINY, cfg, shards,
                        tmp_path / experiment, progress=False)
        assert summary["schedule"]["steps"] == steps
        assert len((tmp_path / experiment / "train_log.csv").read_text().splitlines()) == steps + 1


def test_center_crop_view_matches_torchvision_on_pil():
    oracle = Compose([Resize(16, interpolation=InterpolationMode.BICUBIC), CenterCrop(16)])
    for size in [(50, 37), (37, 50), (64, 64), (33, 200)]:
        image = Image.effect_noise(size, 60).convert("RGB")
        assert resize_center_crop(image, 16).tobytes() == oracle(image).tobytes()


def test_width_study_starts_from_frozen_encoders_with_new_projections(tmp_path):
    """MERU Table 3: encoders of a trained model, frozen; new projections of another width, trained."""
    shards = _shards(tmp_path / "data")
    base = {"id": "base", "method": "meru", "backbone": "vit_s16", "seed": 0}
    train(base, TINY, TRAIN_CFG, shards, tmp_path / "base", progress=False)
    narrow = {"id": "narrow", "method": "meru", "backbone": "vit_s16", "seed": 0,
              "overrides": {"embed_dim": 4, "init_from": "base", "freeze_encoders": True}}
    train(narrow, TINY, TRAIN_CFG, shards, tmp_path / "narrow", progress=False,
          init_checkpoint=tmp_path / "base" / "checkpoint.pt")
    before = torch.load(tmp_path / "base" / "checkpoint.pt", weights_only=True)["model"]
    after = torch.load(tmp_path / "narrow" / "checkpoint.pt", weights_only=True)["model"]
    encoders = [k for k in before if k.startswith(("visual.", "textual."))]
    assert encoders and all(torch.equal(before[k], after[k]) for k in encoders)
    assert after["visual_proj.weight"].shape == (4, 16) and before["visual_proj.weight"].shape == (8, 16)
    with pytest.raises(InputError, match="give that experiment's checkpoint"):
        train(narrow, TINY, TRAIN_CFG, shards, tmp_path / "again", progress=False)


def test_every_trained_model_takes_the_public_codes_weight_decay_reading():
    """MERU's public code, whose numbers its recipe sentence describes, spares only the learned scalars; PoinCLIP
    copies that sentence word for word, so its models take the same reading as its copies of MERU's rows, and the
    PoinCLIP-vs-MERU comparison differs in the method only."""
    for path in sorted((REPO / "replication").glob("*.yaml")):
        for exp in load_spec(path).experiments.values():
            if exp.source == "train":
                assert exp.overrides.get("no_weight_decay", "scalars") == "scalars", exp.id
    with pytest.raises(InputError, match="no_weight_decay 'biases' is not one of scalars, gains_biases_scalars"):
        check_recipe({"id": "x", "method": "clip", "overrides": {"no_weight_decay": "biases"}})


def test_merus_subreddit_prefix_goes_with_whole_pairs_from_redcaps():
    """MERU's RedCaps mapper prefixes captions (its CLIP and MERU, HyCoCLIP's reproductions of them with boxes or
    without, PoinCLIP's copy of MERU's recipe); HyCoCLIP's grounded-shard mapper does not, nor do other corpora."""
    def prefix(method, data, boxes=False, **overrides):
        return subreddit_prefix({"id": "x", "method": method, "data": data, "boxes": boxes, "overrides": overrides})

    assert prefix("meru", "redcaps") == prefix("clip", "redcaps") == prefix("poinclip", "redcaps") == 0.5
    assert prefix("meru", "redcaps", boxes=True) == prefix("clip", "redcaps", boxes=True) == 0.5  # CLIP† but boxes
    assert prefix("hycoclip", "redcaps", boxes=True) == 0.0
    assert prefix("meru", "grit") == prefix("clip", "yfcc15m") == 0.0
    assert prefix("meru", "redcaps", subreddit_prefix=0.25) == 0.25
    for bad in (1.5, "half"):
        with pytest.raises(InputError, match="subreddit_prefix .* must be a probability"):
            check_recipe({"id": "x", "method": "meru", "overrides": {"subreddit_prefix": bad}})
    with pytest.raises(InputError, match="misalign the caption's parse"):
        check_recipe({"id": "x", "method": "syntax_meru", "overrides": {"subreddit_prefix": 0.5}})


def test_hycoclips_lineage_views_its_whole_images_border_padded_and_merus_rows_do_not():
    """HyCoCLIP App. B: "resized using border padding and random cropping"; its code's shards store every whole image
    padded, and its CLIP and MERU baselines read them. MERU's own recipe (CLIP†, MERU†, their "w/ boxes" twins on
    RedCaps, PoinCLIP, MERU's tables) crops the image as it is."""
    specs = {path.stem: load_spec(path) for path in sorted((REPO / "replication").glob("*.yaml"))}
    views = {(paper, exp.id): image_view({"id": exp.id, "method": exp.method, "data": exp.data,
                                          "overrides": exp.overrides})
             for paper, spec in specs.items() for exp in spec.experiments.values() if exp.source == "train"}
    for (paper, experiment), view in views.items():
        exp = specs[paper].experiments[experiment]
        border = exp.method == "hycoclip" or exp.data in ("grit", "cc3m")
        assert view == ("border" if border else "original"), experiment
    assert views["hycoclip", "hyco_hycoclip_vits_redcaps"] == "border"
    assert views["hycoclip", "hyco_clip_vits_redcaps_boxes"] == views["meru", "meru_clip_vits"] == "original"
    assert {view for (paper, _), view in views.items() if paper == "syntax_vse"} >= {"border"}
    assert image_view({"id": "x", "method": "meru", "data": "grit", "overrides": {"image_view": "original"}}) == \
        "original"
    with pytest.raises(InputError, match="image_view 'padded' is not one of original, border"):
        check_recipe({"id": "x", "method": "meru", "overrides": {"image_view": "padded"}})
