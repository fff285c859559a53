"""The method registry: one declaration per method, the one place the suite learns the methods it trains or aligns.

An entry (`Method`) gives a method's name; its model class, named by `module:Class` and imported only when a model
is built (`hypvl.models.build`), so that planning reads the registry without torch; the experiment overrides its
model honours (constructor arguments; for an aligning method, every override its alignment reads); the geometry its
embeddings live in; and its recipe hooks: whether the release format (MERU's and HyCoCLIP's code) holds it, whether
it trains on the dependency parses of the grounded shards, whether it reads them compositionally (whole images with
their boxes' crops and phrases, HyCoCLIP), whether it views whole images as HyCoCLIP's code stores them, and whether
it aligns another experiment's model instead of training one (`hypvl finetune`). Everything that lists methods reads
this registry: recipe checks (`hypvl.train.recipe`), planning (`hypvl.workflow`), model building, extra models'
release format (`hypvl.extras`). A plug-in (config `plugins`) registers its own with `register_method`, as the
entries below are. Torch-free.
"""

from dataclasses import dataclass

from hypvl.errors import InputError


@dataclass(frozen=True)
class Method:
    """One method. model: `module:Class` of its model class (built with an image encoder, a text encoder, the
    embedding width and its `overrides` as keyword arguments), None for a method that builds no model of its own."""

    name: str
    model: str | None
    geometry: str
    overrides: tuple[str, ...] = ()
    released: bool = False  # the release format holds it (extras' `released-format:`)
    parses: bool = False  # trains on whole pairs with their dependency parses (no boxes, no caption prefix)
    compositional: bool = False  # reads the grounded shards compositionally (whole images, box crops, phrases)
    border_view: bool = False  # views whole training images as HyCoCLIP's code stores them (border-padded)
    aligns: bool = False  # aligns the model of the experiment its `base` override names (`hypvl finetune`)


METHODS: dict[str, Method] = {}


def register_method(method: Method) -> Method:
    """Registers `method` under its name (once; the same declaration again is a no-op)."""
    if METHODS.get(method.name, method) != method:
        raise InputError(f"method {method.name!r} is registered twice, differently")
    METHODS[method.name] = method
    return method


def names(**flags) -> tuple[str, ...]:
    """The registered methods whose entries have each given field value (e.g. `parses=True`), in registration order."""
    return tuple(name for name, method in METHODS.items()
                 if all(getattr(method, field) == value for field, value in flags.items()))


def built() -> tuple[str, ...]:
    """The methods whose models the suite builds and trains (every one with a model class)."""
    return tuple(name for name, method in METHODS.items() if method.model is not None)


# experiment overrides that change the architecture of every built method (MERU Table 3: embedding width; Table 5: a
# learned position embedding instead of the fixed sin-cos one)
ARCHITECTURE_OVERRIDES = ("embed_dim", "pos_embed")
POS_EMBEDS = ("sincos", "learned")
# experiment overrides the evaluation honours (`hypvl evaluate --prompts`: MERU Table 5's CLIP-prompt rows); they
# change how a model is evaluated, not the model
EVAL_OVERRIDES = ("eval_prompts",)
# MERU's contrastive similarity (Table 4 row 3): negative Lorentzian distance, or the Lorentzian inner product
CONTRASTIVE_SIMILARITIES = ("neg_distance", "lorentz_inner")

register_method(Method("clip", "hypvl.models.clip:CLIP", "euclidean", ("temperature",), released=True))
register_method(Method("meru", "hypvl.models.meru:MERU", "lorentz",
                       ("temperature", "curv_init", "learn_curv", "entail_weight", "contrastive_similarity"),
                       released=True))
register_method(Method("hycoclip", "hypvl.models.hycoclip:HyCoCLIP", "lorentz",
                       ("temperature", "curv_init", "learn_curv", "gamma", "eta_inter", "eta_intra", "hcc_terms",
                        "hce_terms"), released=True, compositional=True,
                       border_view=True))
# PoinCLIP Tables 4-5: lambda (entail_weight), lambda_reg, the entailment order; the readings of the paper's unstated
# entropy input and printed exp map
register_method(Method("poinclip", "hypvl.models.poinclip:PoinCLIP", "poincare",
                       ("temperature", "curv_init", "learn_curv", "entail_weight", "lambda_reg", "entailment_order",
                        "entropy", "exp_map")))
register_method(Method("syntax_meru", "hypvl.models.syntax_meru:SyntaxMERU", "lorentz",
                       ("temperature", "curv_init", "learn_curv", "entail_weight", "syntax_weight"), parses=True))
# HierarCaps' text-only Radial Embedding alignment of the (Euclidean) model of another experiment (`base`: its id or
# its source), by `hypvl finetune` (hypvl.train.radial_recipe reads and checks these; the paper's values are the
# defaults)
RADIAL_METHOD = register_method(Method(
    "radial_ft", None, "euclidean",
    ("base", "epochs", "batch_size", "lr", "lambda_re", "lambda_reg", "regulariser", "objective", "negatives",
     "drop_tiers", "root", "train_only_root", "eval_root", "init", "ec_alpha", "ec_epsilon", "ec_margin"),
    aligns=True)).name
