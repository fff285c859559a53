"""Text-only Radial Embedding (RE) alignment of a dual encoder (HierarCaps paper Sec. 6 "Full Alignment Framework",
App. B.4, C.1, C.5; the authors' code/train.py).

The base model is any checkpoint `load_checkpoint` rebuilds (ours, or a wrapped open_clip/transformers model) with a
Euclidean geometry; only its `text_parameters()` train, every other weight stays bitwise as loaded. Each step takes
a batch of HierarCaps train rows (shuffled), embeds their positive and negative tiers (unit norm), forms the triplets
(P_i, P_{i+1}, N_i) of consecutive kept tiers and minimises lambda_RE (L^mean + L^minimax) + lambda_reg L_reg
(`hypvl.losses.radial`) with AdamW. The root is the empty string's embedding through the current text tower,
recomputed every batch. Table 3's and Table 5's variants are the experiment overrides of `RadialRecipe`; Table 3's
"FT with CLIP objective" replaces L_RE by CLIP's contrastive loss between the row's image (found by its tier-4 caption
in CC3M, `hierarcaps.train_images`; rows without one are left out) and one of its positive tiers drawn at random,
at the model's own (frozen) temperature `logit_scale`; its regulariser covers the texts drawn.
The model stays in eval mode (no dropout, and a frozen tower's batch-norm statistics stay put); the authors' code
calls train() on an HF CLIPModel, which has neither, so this changes nothing for the paper's CLIP models.
"""

import copy
import csv
import json
import math
import time
from dataclasses import dataclass, fields
from pathlib import Path

import torch
from tqdm import tqdm

from hypvl.data.formats.hierarcaps import LEVELS, read_hierarcaps_train, train_images
from hypvl.data.formats.images import decode_image
from hypvl.data.transforms import resize_center_crop, to_tensor_batch
from hypvl.devices import select_device
from hypvl.errors import InputError
from hypvl.io import atomic_write
from hypvl.losses.contrastive import symmetric_contrastive
from hypvl.losses.radial import EC_MARGINS, REGULARISERS, ec_terms, mined_loss, re_terms, regulariser
from hypvl.models.checkpoints import build_from_recipe, load_checkpoint, save_checkpoint

from .recipe import RADIAL_METHOD, check_recipe

# Table 3: where the root is (learned: e_empty of the current text tower; fixed at the train texts' normalised mean
# e-bar, at the origin, or at the pretrained e_empty); which loss replaces L_RE (Table 5: entailment cones; Table 3:
# CLIP's contrastive loss); the weights the text tower starts from; the root evaluation uses after a fixed-root run
# (`empty`: the aligned model's e_empty, as the authors' eval.py computes it; `training`: the fixed root itself)
ROOTS = ("learned", "fixed_mean", "fixed_origin", "fixed_empty")
OBJECTIVES = ("radial", "entailment_cone", "clip")
INITS = ("pretrained", "random")
EVAL_ROOTS = ("empty", "training")
CHOICES = {"regulariser": REGULARISERS, "objective": OBJECTIVES, "root": ROOTS, "eval_root": EVAL_ROOTS,
           "init": INITS, "ec_margin": EC_MARGINS}
POSITIVE = ("epochs", "batch_size", "lr", "ec_epsilon")  # numeric overrides that must be > 0 (the rest >= 0)
EMBED_BATCH = 256  # texts or images per forward pass when embedding the whole train set
LOG_FIELDS = ("step", "loss", "re_mean", "re_minimax", "contrastive", "regulariser", "lr")


@dataclass(frozen=True)
class RadialRecipe:
    """One RE alignment: the paper's settings (App. B.4) unless an experiment override says otherwise."""

    base: str
    epochs: int = 1
    batch_size: int = 8
    lr: float = 1e-7
    lambda_re: float = 1.0
    lambda_reg: float = 10.0
    regulariser: str = "code"  # (1 - mean cos) / 2 as the authors' code, or the paper's -mean cos
    objective: str = "radial"
    negatives: bool = True  # False: every negative term is 0 (Table 3 "no negative examples")
    drop_tiers: tuple[int, ...] = ()  # tiers (1-4) removed from the training data (Table 3 "3 tiers": (2,))
    root: str = "learned"
    train_only_root: bool = False  # learn a free root vector (initialised at e_empty) and nothing else
    eval_root: str = "empty"
    init: str = "pretrained"  # random: the base's architecture, freshly initialised (Table 3 "from scratch")
    ec_alpha: float = 0.0
    ec_epsilon: float = 0.05
    ec_margin: str = "outside"  # App. B.2's reading of the margin (hypvl.losses.radial), which Table 5 needs

    @property
    def tiers(self) -> tuple[int, ...]:
        """The tiers (1-4) the training data keeps, general to specific."""
        return tuple(t for t in range(1, LEVELS + 1) if t not in self.drop_tiers)

    @property
    def stores_root(self) -> bool:
        """True when evaluation uses the root training used rather than the aligned model's e_empty."""
        return self.train_only_root or (self.root != "learned" and self.eval_root == "training")


def _problem(name: str, value, default) -> str | None:
    """Why `value` cannot be override `name` (whose default is `default`), or None."""
    if name in CHOICES:
        return None if value in CHOICES[name] else f"must be one of {list(CHOICES[name])}, got {value!r}"
    if name == "base":
        return None if isinstance(value, str) and value else f"must name an experiment or a source, got {value!r}"
    if name == "drop_tiers":
        tiers = value if isinstance(value, list) else [value]
        if not all(type(t) is int and 1 <= t <= LEVELS for t in tiers) or len(set(tiers)) != len(tiers):
            return f"must be a list of distinct tiers 1-{LEVELS}, got {value!r}"
        return None if LEVELS - len(tiers) >= 2 else f"must keep at least 2 tiers to form a triplet, got {value!r}"
    if isinstance(default, bool):
        return None if isinstance(value, bool) else f"must be true or false, got {value!r}"
    kind = int if isinstance(default, int) else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(value):
        return f"must be a {'whole' if kind is int else 'finite'} number, got {value!r}"
    if value < 0 or (value == 0 and name in POSITIVE):
        return f"must be {'positive' if name in POSITIVE else 'non-negative'}, got {value!r}"
    return None


def radial_recipe(experiment: dict) -> RadialRecipe:
    """The RadialRecipe of a `radial_ft` experiment ({id, method, overrides}); InputError names the experiment and
    the override that is unknown, mistyped, out of range or inconsistent with the others."""
    check_recipe(experiment)
    where = f"experiment {experiment['id']!r}"
    if experiment["method"] != RADIAL_METHOD:
        raise InputError(f"{where}: method {experiment['method']!r} is not {RADIAL_METHOD!r}")
    overrides = dict(experiment.get("overrides") or {})
    if "base" not in overrides:
        raise InputError(f"{where}: {RADIAL_METHOD} needs the override `base` (the experiment, or the source, whose "
                         "model it aligns)")
    defaults = {field.name: field.default for field in fields(RadialRecipe)}
    values = {name: value for name, value in overrides.items() if name in defaults}
    for name, value in values.items():
        problem = _problem(name, value, defaults[name])
        if problem:
            raise InputError(f"{where}: override {name} {problem}")
    values["drop_tiers"] = tuple(sorted(values.get("drop_tiers", ())))
    recipe = RadialRecipe(**values)
    if recipe.objective != "entailment_cone" and any(name.startswith("ec_") for name in values):
        raise InputError(f"{where}: overrides ec_alpha, ec_epsilon and ec_margin apply only to objective "
                         "entailment_cone")
    if recipe.train_only_root and recipe.root != "learned":
        raise InputError(f"{where}: train_only_root learns the root, it cannot also be {recipe.root}")
    if "eval_root" in values and recipe.root == "learned":
        raise InputError(f"{where}: eval_root applies only to a fixed root (root: {', '.join(ROOTS[1:])})")
    return recipe


def radial_schedule(recipe: RadialRecipe, radial_cfg: dict) -> tuple[int, float]:
    """(epochs, lr) at the running scale: config `radial_ft.epochs` replaces the experiment's epochs where set, and
    its learning rate is multiplied by `radial_ft.lr_scale` (the smoke scale's mapping; 1 at paper scale)."""
    return radial_cfg["epochs"] or recipe.epochs, recipe.lr * radial_cfg["lr_scale"]


def embed(model, texts: list[str], device: torch.device) -> torch.Tensor:
    """(len(texts), D) embeddings (unit vectors) of `texts` by the model's text tower, with gradients."""
    return model.embed_text(model.text_features(model.tokenizer(texts).to(device)))


@torch.no_grad()
def mean_root(model, pairs, device: torch.device) -> torch.Tensor:
    """App. C.1's e-bar: the normalised mean embedding of every text of the train set (all tiers, positive and
    negative, each occurrence counted)."""
    texts = [text for pair in pairs for text in (*pair.positive, *pair.negative)]
    total = sum(embed(model, texts[start:start + EMBED_BATCH], device).sum(dim=0)
                for start in range(0, len(texts), EMBED_BATCH))
    return torch.nn.functional.normalize(total, dim=-1)


class Root:
    """The entailment root of each step: learned (e_empty of the current tower, or a free vector) or fixed."""

    def __init__(self, recipe: RadialRecipe, model, pairs, device: torch.device):
        self.model, self.device, self.free = model, device, None
        with torch.no_grad():
            empty = embed(model, [""], device)[0]
        if recipe.train_only_root:
            self.free = torch.nn.Parameter(empty.clone())
        self.fixed = None
        if recipe.root == "fixed_empty":
            self.fixed = empty
        elif recipe.root == "fixed_origin":
            self.fixed = torch.zeros_like(empty)
        elif recipe.root == "fixed_mean":
            self.fixed = mean_root(model, pairs, device)

    def __call__(self) -> torch.Tensor:
        if self.free is not None:
            return torch.nn.functional.normalize(self.free, dim=-1)
        return self.fixed if self.fixed is not None else embed(self.model, [""], self.device)[0]


@torch.no_grad()
def image_embeddings(model, images: list[bytes], device: torch.device) -> torch.Tensor:
    """(len(images), D) embeddings of encoded images, resized and centre-cropped to the model's input size."""
    views = [resize_center_crop(decode_image(data, f"train image {i}"), model.image_size)
             for i, data in enumerate(images)]
    return torch.cat([model.encode_image(to_tensor_batch(views[start:start + EMBED_BATCH]).to(device))
                      for start in range(0, len(views), EMBED_BATCH)])


def radial_terms(recipe: RadialRecipe, chains: torch.Tensor, root: torch.Tensor) -> dict[str, torch.Tensor]:
    """L_RE (or an EC loss) aggregated with hard mining over (positive | negative, tier, item, D) embeddings."""
    general, specific, negative = chains[0, :-1], chains[0, 1:], chains[1, :-1]
    if recipe.objective == "entailment_cone":
        pos, neg = ec_terms(general, specific, negative, root, recipe.ec_alpha, recipe.ec_epsilon, recipe.ec_margin)
    else:
        pos, neg = re_terms(general, specific, negative, root)
    if not recipe.negatives:
        neg = torch.zeros_like(neg)
    terms = {f"re_{name}": value for name, value in mined_loss(pos, neg).items()}
    terms["loss"] = recipe.lambda_re * (terms["re_mean"] + terms["re_minimax"])
    return terms


def batch_losses(recipe: RadialRecipe, model, frozen, rows, device, root: torch.Tensor | None = None,
                 images: torch.Tensor | None = None,
                 generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
    """The loss terms of one batch of train rows: the radial ones at `root`, or (CLIP objective) the contrastive loss
    against the rows' image embeddings `images` with one positive tier per row drawn by `generator`; `frozen` is
    the pretrained model, None without regulariser."""
    tiers = [t - 1 for t in recipe.tiers]
    if recipe.objective == "clip":
        drawn = torch.randint(len(tiers), (len(rows),), generator=generator).tolist()
        texts = [row.positive[tiers[i]] for row, i in zip(rows, drawn)]
        current = embed(model, texts, device)
        terms = {"contrastive": symmetric_contrastive(model.similarity(images, current) * model.logit_scale.exp())}
        terms["loss"] = recipe.lambda_re * terms["contrastive"]
    else:
        texts = [row.positive[t] for t in tiers for row in rows] + [row.negative[t] for t in tiers for row in rows]
        current = embed(model, texts, device)
        terms = radial_terms(recipe, current.view(2, len(tiers), len(rows), -1), root)  # (pos | neg, tier, item, D)
    if frozen is not None:
        with torch.no_grad():
            pretrained = embed(frozen, texts, device)
        terms["regulariser"] = regulariser(current, pretrained, recipe.regulariser)
        terms["loss"] = terms["loss"] + recipe.lambda_reg * terms["regulariser"]
    return terms


def with_images(pairs, cc3m: Path | None) -> tuple[list, list[bytes]]:
    """The train rows that have an image in the CC3M shards `cc3m`, and their encoded images."""
    if cc3m is None:
        raise InputError("the CLIP objective needs the train rows' images: give the CC3M shards (--train-images)")
    found = [(pair, image) for pair, image in zip(pairs, train_images(pairs, cc3m)) if image is not None]
    if not found:
        raise InputError(f"{cc3m}: no caption there is the last positive level of a HierarCaps train row")
    return [pair for pair, _ in found], [image for _, image in found]


def finetune(experiment: dict, base_checkpoint: Path, train_csv: Path, radial_cfg: dict, out_dir: Path,
             progress: bool = True, images: Path | None = None) -> dict:
    """Align the model of `base_checkpoint` as `experiment` ({id, method, seed, overrides}) on the HierarCaps train
    rows of `train_csv` (the CLIP objective: those with an image in the CC3M shards `images`); write checkpoint.pt
    (the base's recipe, so the same architecture rebuilds), train_log.csv and train_summary.json into `out_dir`.
    Returns the summary."""
    recipe = radial_recipe(experiment)
    epochs, lr = radial_schedule(recipe, radial_cfg)
    seed = experiment.get("seed", 0)
    device = select_device(radial_cfg["device"])
    torch.use_deterministic_algorithms(device.type == "cpu")
    pairs = read_hierarcaps_train(train_csv)
    if not pairs:
        raise InputError(f"{train_csv}: no training rows")
    listed = len(pairs)
    if recipe.objective == "clip":
        pairs, encoded = with_images(pairs, images)
    model, base_recipe = load_checkpoint(base_checkpoint)
    if model.geometry != "euclidean":
        raise InputError(f"{base_checkpoint}: {RADIAL_METHOD} aligns Euclidean dual encoders (the paper's), "
                         f"this checkpoint holds a {model.geometry} model")
    if recipe.init == "random":
        torch.manual_seed(seed)
        model = build_from_recipe(base_recipe, base_checkpoint).eval()
    model = model.to(device).requires_grad_(False)
    frozen = copy.deepcopy(model) if recipe.lambda_reg > 0 and not recipe.train_only_root else None
    root = Root(recipe, model, pairs, device)
    row_images = image_embeddings(model, encoded, device) if recipe.objective == "clip" else None
    trainable = [root.free] if recipe.train_only_root else model.text_parameters()
    for param in trainable:
        param.requires_grad_(True)
    optimizer = torch.optim.AdamW(trainable, lr=lr, weight_decay=radial_cfg["weight_decay"], fused=True)
    per_epoch = math.ceil(len(pairs) / recipe.batch_size)
    order = torch.Generator().manual_seed(seed)
    start, rows = time.perf_counter(), []
    bar = tqdm(total=epochs * per_epoch, desc=experiment["id"], disable=not progress, mininterval=2.0)
    for _ in range(epochs):
        permutation = torch.randperm(len(pairs), generator=order).tolist()
        for first in range(0, len(pairs), recipe.batch_size):
            chosen = permutation[first:first + recipe.batch_size]
            batch = [pairs[i] for i in chosen]
            if recipe.objective == "clip":
                terms = batch_losses(recipe, model, frozen, batch, device, images=row_images[chosen], generator=order)
            else:
                terms = batch_losses(recipe, model, frozen, batch, device, root=root())
            optimizer.zero_grad(set_to_none=True)
            terms["loss"].backward()
            optimizer.step()
            rows.append({"step": len(rows), "lr": lr, **{name: value.item() for name, value in terms.items()}})
            bar.update()
    bar.close()
    out_dir = Path(out_dir)
    fine_tuning = {"method": RADIAL_METHOD, "overrides": experiment.get("overrides") or {},
                   "base_experiment": base_recipe.get("experiment")}
    with torch.no_grad():
        stored = root().cpu() if recipe.stores_root else None
    save_checkpoint(out_dir / "checkpoint.pt", model.cpu(),
                    {**base_recipe, "experiment": experiment["id"], "fine_tuning": fine_tuning}, len(rows), stored)
    with atomic_write(out_dir / "train_log.csv") as handle:
        writer = csv.DictWriter(handle, LOG_FIELDS, restval="")  # empty: a term this run does not have
        writer.writeheader()
        writer.writerows(rows)
    summary = {"experiment": experiment["id"], "base_checkpoint": str(base_checkpoint), "items": len(pairs),
               "rows_without_image": listed - len(pairs),
               "schedule": {"epochs": epochs, "steps": len(rows), "batch_size": recipe.batch_size, "lr": lr},
               "final": rows[-1], "seconds": round(time.perf_counter() - start, 2)}
    with atomic_write(out_dir / "train_summary.json") as handle:
        json.dump(summary, handle, indent=1)
    return summary
