"""A training run's recipe at the running scale: the schedule, how the method reads its corpus, and which
experiment overrides the trainer honours. Declarations only (no torch), so the workflow plans without it."""

from dataclasses import dataclass

from hypvl.config import steps_for
from hypvl.errors import InputError
from hypvl.methods import ARCHITECTURE_OVERRIDES, EVAL_OVERRIDES, METHODS, names

# experiment overrides the trainer itself reads (the schedule, MERU Table 3's frozen-encoder runs, which parameters
# escape weight decay)
TRAINER_OVERRIDES = ("steps", "schedule_steps", "batch_size", "lr", "init_from", "freeze_encoders", "no_weight_decay",
                     "subreddit_prefix", "image_view")
# schedule overrides: (key, type, least, most); a value outside would loop, allocate or compute nonsense
SCHEDULE_OVERRIDES = (("steps", int, 1, 10**8), ("schedule_steps", int, 1, 10**8), ("batch_size", int, 1, 10**6),
                      ("lr", (int, float), 1e-12, 10.0))
# `no_weight_decay`: the learned scalars only (the public MERU and HyCoCLIP code; the default), or also every gain
# and bias (the sentence MERU and PoinCLIP print); see hypvl.train.optim.param_groups
NO_WEIGHT_DECAY = ("scalars", "gains_biases_scalars")
# MERU's text augmentation (Sec. 4.1): the probability of prefixing a RedCaps caption with its subreddit
MERU_SUBREDDIT_PREFIX = 0.5
# How a whole training image is viewed before its random crop (`image_view`): MERU's crop of the image as it is
# ("original"), or HyCoCLIP's crop of the image as its shards store it, border-padded to a square ("border": App. B,
# "resized using border padding and random cropping"; hypvl.data.formats.images.border_stored)
IMAGE_VIEWS = ("original", "border")
# the corpora HyCoCLIP's code prepares into its own shards, which every model trained on them reads (its CLIP and MERU
# baselines, syntax-preserving MERU's GRIT rows)
HYCOCLIP_CORPORA = ("grit", "cc3m")


def supported_overrides(method: str) -> set[str]:
    """The experiment overrides something reads when training or evaluating `method` (a registered method,
    hypvl.methods): its own, the evaluation's, and, for a method that trains a model, the trainer's and the
    architecture's."""
    declared = METHODS[method]
    if declared.aligns:
        return {*declared.overrides, *EVAL_OVERRIDES}
    return {*TRAINER_OVERRIDES, *ARCHITECTURE_OVERRIDES, *declared.overrides, *EVAL_OVERRIDES}


def check_recipe(experiment: dict) -> None:
    """InputError naming the experiment when its method is not built or an override would be ignored."""
    method = experiment["method"]
    if method not in METHODS:
        raise InputError(f"experiment {experiment['id']!r}: unknown method {method!r} (built: {list(METHODS)})")
    if method in names(parses=True) and experiment.get("boxes", False):
        raise InputError(f"experiment {experiment['id']!r}: {method} trains on whole image-caption pairs with their "
                         "parses; it takes no boxes (set boxes: false)")
    overrides = experiment.get("overrides") or {}
    if overrides.get("no_weight_decay", "scalars") not in NO_WEIGHT_DECAY:
        raise InputError(f"experiment {experiment['id']!r}: no_weight_decay {overrides['no_weight_decay']!r} is not "
                         f"one of {', '.join(NO_WEIGHT_DECAY)}")
    if overrides.get("image_view", IMAGE_VIEWS[0]) not in IMAGE_VIEWS:
        raise InputError(f"experiment {experiment['id']!r}: image_view {overrides['image_view']!r} is not one of "
                         f"{', '.join(IMAGE_VIEWS)}")
    prefix = overrides.get("subreddit_prefix", 0.0)
    if not (isinstance(prefix, (int, float)) and 0 <= prefix <= 1) or (prefix and method in names(parses=True)):
        raise InputError(f"experiment {experiment['id']!r}: subreddit_prefix {prefix!r} must be a probability in "
                         f"[0, 1], and 0 for {', '.join(names(parses=True))} (a prefix would misalign the caption's "
                         "parse)")
    for key, kind, low, high in SCHEDULE_OVERRIDES if not METHODS[method].aligns else ():  # radial_recipe: its own
        value = overrides.get(key, low)
        if not (isinstance(value, kind) and not isinstance(value, bool) and low <= value <= high):
            raise InputError(f"experiment {experiment['id']!r}: override {key} {value!r} must be a number in "
                             f"[{low:g}, {high:g}]")
    if "schedule_steps" in overrides and not overrides["schedule_steps"] >= overrides.get("steps", 10**9):
        raise InputError(f"experiment {experiment['id']!r}: override schedule_steps {overrides['schedule_steps']} "
                         "needs the run's own `steps`, at most as many (the run trains the first steps of it)")
    ignored = sorted(set(overrides) - supported_overrides(method))
    if ignored:
        raise InputError(f"experiment {experiment['id']!r}: method {method!r} does not support the overrides "
                         f"{ignored} (supported: {sorted(supported_overrides(method))})")


@dataclass(frozen=True)
class Schedule:
    """Steps, batch size, warm-up and peak learning rate of one run at the running scale, and the length of its
    learning-rate schedule (`schedule_steps`: the steps, unless the run is the first part of a longer schedule)."""

    steps: int
    batch_size: int
    warmup: int
    lr: float
    schedule_steps: int


def train_section_for(experiment_id: str, train_cfg: dict) -> dict:
    """The train config `experiment_id` runs under: `steps` from the last `steps_for` entry matching it (if any),
    without `steps_for` (e.g. PoinCLIP Table 4's 25 grid models take 100 steps at smoke scale, the others 500)."""
    section = {key: value for key, value in train_cfg.items() if key != "steps_for"}
    matching = list(steps_for(experiment_id, train_cfg).values())
    return {**section, "steps": matching[-1]} if matching else section


def recorded_train_section(experiment_id: str, train_cfg: dict) -> dict:
    """The train config a checkpoint of `experiment_id` records (part of the run config `hypvl compare` checks): of
    `train.steps_for`, only the entries matching it, so that editing another experiment's entry leaves its record
    as it was."""
    section = {key: value for key, value in train_cfg.items() if key != "steps_for"}
    return {**section, "steps_for": steps_for(experiment_id, train_cfg)}


def resolve_schedule(overrides: dict, train_cfg: dict) -> Schedule:
    """The experiment's paper schedule mapped to this scale.

    `train.steps`, when set, replaces the experiment's step count (smoke scale; `train_cfg` is the experiment's
    `train_section_for`); the experiment's batch size is multiplied by `train.batch_size_scale`; warm-up keeps the
    paper's 4k/steps fraction. With `schedule_steps` (paper steps, at least `steps`) the run trains the first `steps`
    of that longer warm-up and cosine schedule (e.g. PoinCLIP Table 4's grid read as the first 6k of 120k steps),
    scaled by the same factor.
    """
    paper_steps = overrides.get("steps", train_cfg["paper_steps"])
    paper_schedule = overrides.get("schedule_steps", paper_steps)
    steps = train_cfg.get("steps") or paper_steps
    total = round(steps * paper_schedule / paper_steps)
    paper_batch = overrides.get("batch_size", train_cfg["paper_batch_size"])
    batch = max(2, round(paper_batch * train_cfg["batch_size_scale"]))
    _bounded(batch, "batch_size", f"the batch {paper_batch} x train.batch_size_scale {train_cfg['batch_size_scale']}")
    _bounded(total, "schedule_steps", f"the schedule of {steps} steps at this scale")
    warmup = max(1, round(total * min(1.0, train_cfg["paper_warmup"] / paper_schedule)))
    return Schedule(steps, batch, warmup, overrides.get("lr", train_cfg["lr"]), total)


def _bounded(value: int, key: str, what: str) -> None:
    """InputError where a derived `value` exceeds the most SCHEDULE_OVERRIDES allows `key` (what the config and spec
    bound one by one, a product may still exceed: a batch of 10^9 would take memory until the machine fails)."""
    most = next(high for name, _, _, high in SCHEDULE_OVERRIDES if name == key)
    if value > most:
        raise InputError(f"{what} is {value:.4g}, over the most a run takes ({most:g}); refused")


def subreddit_prefix(experiment: dict) -> float:
    """The probability of MERU's subreddit prefix on a training caption: the `subreddit_prefix` override, else
    MERU's 0.5 for whole pairs read from the raw RedCaps (MERU's RedCaps mapper, which HyCoCLIP's CLIP and MERU
    reproductions, with boxes or without, and PoinCLIP follow), else 0 (HyCoCLIP's own RedCaps run reads its grounded
    shards, whose mapper has no subreddit; syntax-preserving MERU keeps its caption as parsed; other corpora have
    none). Box phrases are never prefixed."""
    overrides = experiment.get("overrides") or {}
    if "subreddit_prefix" in overrides:
        return float(overrides["subreddit_prefix"])
    raw_pairs = stream_mode(experiment["method"], experiment.get("boxes", False)) != "compositional"
    redcaps_pairs = experiment.get("data") == "redcaps" and raw_pairs and experiment["method"] not in names(parses=True)
    return MERU_SUBREDDIT_PREFIX if redcaps_pairs else 0.0


def image_view(experiment: dict) -> str:
    """How the experiment's whole training images are viewed (`IMAGE_VIEWS`): the `image_view` override, else
    "border" for the runs of HyCoCLIP's lineage (HyCoCLIP itself, and every model on the corpora its code prepares,
    `HYCOCLIP_CORPORA`), else MERU's "original" (MERU's, PoinCLIP's and HyCoCLIP's MERU-recipe RedCaps rows)."""
    overrides = experiment.get("overrides") or {}
    if "image_view" in overrides:
        return overrides["image_view"]
    hycoclip = experiment["method"] in names(border_view=True) or experiment.get("data") in HYCOCLIP_CORPORA
    return "border" if hycoclip else "original"


def stream_settings(experiment: dict) -> dict:
    """How the experiment's training stream reads its grounded corpus (`hypvl.train.data.TrainingStream`'s mode,
    syntax, subreddit_prefix and image_view)."""
    return {"mode": stream_mode(experiment["method"], experiment.get("boxes", False)),
            "syntax": experiment["method"] in names(parses=True), "subreddit_prefix": subreddit_prefix(experiment),
            "image_view": image_view(experiment)}


def stream_mode(method: str, boxes: bool) -> str:
    """How a method reads a grounded corpus (see hypvl.train.data)."""
    if method in names(compositional=True):
        return "compositional"
    return "boxes_as_pairs" if boxes else "pairs"
