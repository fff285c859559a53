"""The recipe of a HierarCaps Radial Embedding alignment (method radial_ft, `hypvl.train.radial`): the paper's
settings (App. B.4) as defaults, every Table 3 and Table 5 variant an experiment override, each override checked,
and the schedule at the running scale."""

import math
from dataclasses import dataclass, fields

from hypvl.data.formats.hierarcaps import LEVELS
from hypvl.errors import InputError
from hypvl.losses.radial import EC_MARGINS, REGULARISERS
from hypvl.methods import RADIAL_METHOD

from .recipe import check_recipe

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
MOST = {"epochs": 10**5, "batch_size": 10**6, "lr": 10.0}  # the largest of each numeric override (the rest: 10^6)


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
    return None if value <= MOST.get(name, 10**6) else f"must be at most {MOST.get(name, 10**6):g}, got {value!r}"


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
    lr = recipe.lr * radial_cfg["lr_scale"]
    if lr > MOST["lr"]:
        raise InputError(f"the learning rate {recipe.lr:g} x radial_ft.lr_scale {radial_cfg['lr_scale']:g} is {lr:g}, "
                         f"over the most a run takes ({MOST['lr']:g}); refused")
    return radial_cfg["epochs"] or recipe.epochs, lr
