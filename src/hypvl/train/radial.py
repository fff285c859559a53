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
The aligned model trains in train mode, as the authors' code calls train() on it: dropout acts where the model has it
(ALIGN's BERT, p = 0.1; the CLIPs have none), drawn from the global generator seeded by the experiment's seed. Only its
text tower runs then: the root's fixed starts and the CLIP objective's image embeddings are computed before, in eval
mode (no batch-norm statistics move), and the pretrained reference of L_reg stays in eval mode, as the authors' is.
"""

import copy
import math
import time
from pathlib import Path

import torch
from hypvl.data.formats.hierarcaps import read_hierarcaps_train, train_images
from hypvl.data.formats.images import decode_image
from hypvl.data.transforms import to_tensor_batch
from hypvl.runtime.devices import select_device
from hypvl.errors import InputError
from hypvl.io import write_json
from hypvl.losses.contrastive import symmetric_contrastive
from hypvl.losses.radial import ec_terms, mined_loss, re_terms, regulariser
from hypvl.methods import RADIAL_METHOD
from hypvl.models.checkpoints import build_from_recipe, load_checkpoint, save_checkpoint

from .radial_recipe import RadialRecipe, radial_recipe, radial_schedule
from .telemetry import Telemetry

EMBED_BATCH = 256  # texts or images per forward pass when embedding the whole train set
LOG_FIELDS = ("step", "loss", "re_mean", "re_minimax", "contrastive", "regulariser", "lr")


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
    """(len(images), D) embeddings of encoded images in the model's own view (`eval_view`, "crop": our centre crop; a
    public model's own preprocessing, as the authors' code passes every image through the model's AutoProcessor)."""
    views = [model.eval_view(decode_image(data, f"train image {i}"), model.image_size, "crop")
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


def load_base(recipe: RadialRecipe, base_checkpoint: Path, seed: int, device: torch.device):
    """The model to align, frozen on `device` (Table 3 "from scratch": its architecture freshly initialised from
    `seed`), and its checkpoint's recipe; a checkpoint of another model than the `base` override names (an
    experiment, or a source) is refused."""
    model, base_recipe = load_checkpoint(base_checkpoint, recipe.base)
    if model.geometry != "euclidean":
        raise InputError(f"{base_checkpoint}: {RADIAL_METHOD} aligns Euclidean dual encoders (the paper's), "
                         f"this checkpoint holds a {model.geometry} model")
    if recipe.init == "random":
        torch.manual_seed(seed)
        model = build_from_recipe(base_recipe, base_checkpoint).eval()
    return model.to(device).requires_grad_(False), base_recipe


def finetune(experiment: dict, base_checkpoint: Path, train_csv: Path, radial_cfg: dict, out_dir: Path,
             telemetry: dict, progress: bool = True, images: Path | None = None) -> dict:
    """Align the model of `base_checkpoint` as `experiment` ({id, method, seed, overrides}) on the HierarCaps train
    rows of `train_csv` (the CLIP objective: those with an image in the CC3M shards `images`), reporting as config
    `train.telemetry` (`telemetry`) says; write checkpoint.pt (the base's recipe, so the same architecture rebuilds),
    train_log.csv (a row per step as it goes) and train_summary.json into `out_dir`. Returns the summary."""
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
    model, base_recipe = load_base(recipe, base_checkpoint, seed, device)
    frozen = copy.deepcopy(model) if recipe.lambda_reg > 0 and not recipe.train_only_root else None
    root = Root(recipe, model, pairs, device)
    row_images = image_embeddings(model, encoded, device) if recipe.objective == "clip" else None
    trainable = [root.free] if recipe.train_only_root else model.text_parameters()
    for param in trainable:
        param.requires_grad_(True)
    optimizer = torch.optim.AdamW(trainable, lr=lr, weight_decay=radial_cfg["weight_decay"], fused=True)
    model.train()
    torch.manual_seed(seed)  # dropout's draws
    per_epoch = math.ceil(len(pairs) / recipe.batch_size)
    order = torch.Generator().manual_seed(seed)
    start, rows, out_dir = time.perf_counter(), [], Path(out_dir)
    with Telemetry(out_dir, telemetry, experiment["id"], epochs * per_epoch, recipe.batch_size, device,
                   config={"experiment": experiment, "epochs": epochs, "lr": lr}, progress=progress,
                   fields=LOG_FIELDS) as report:
        for _ in range(epochs):
            permutation = torch.randperm(len(pairs), generator=order).tolist()
            for first in range(0, len(pairs), recipe.batch_size):
                chosen = permutation[first:first + recipe.batch_size]
                batch = [pairs[i] for i in chosen]
                if recipe.objective == "clip":
                    terms = batch_losses(recipe, model, frozen, batch, device, images=row_images[chosen],
                                         generator=order)
                else:
                    terms = batch_losses(recipe, model, frozen, batch, device, root=root())
                optimizer.zero_grad(set_to_none=True)
                terms["loss"].backward()
                optimizer.step()
                rows.append({"step": len(rows), "lr": lr, **{name: value.item() for name, value in terms.items()}})
                report.record(rows[-1])
    model.eval()
    fine_tuning = {"method": RADIAL_METHOD, "overrides": experiment.get("overrides") or {},
                   "base_experiment": base_recipe.get("experiment")}
    with torch.no_grad():
        stored = root().cpu() if recipe.stores_root else None
    save_checkpoint(out_dir / "checkpoint.pt", model.cpu(),
                    {**base_recipe, "experiment": experiment["id"], "fine_tuning": fine_tuning}, len(rows), stored)
    summary = {"experiment": experiment["id"], "base_checkpoint": str(base_checkpoint), "items": len(pairs),
               "rows_without_image": listed - len(pairs),
               "schedule": {"epochs": epochs, "steps": len(rows), "batch_size": recipe.batch_size, "lr": lr},
               "final": rows[-1], "seconds": round(time.perf_counter() - start, 2)}
    write_json(out_dir / "train_summary.json", summary, indent=1)
    return summary
