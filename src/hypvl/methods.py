"""The method registry: one declaration per method, the one place the suite learns the methods it trains or aligns,
and the model classes its checkpoints name.

An entry (`Method`) gives a method's name; its model class, named by `module:Class` and imported only when a model
is built (`hypvl.models.build`), so that planning reads the registry without torch; the experiment overrides its
model honours (constructor arguments; for an aligning method, every override its alignment reads); the geometry its
embeddings live in; and its recipe hooks: whether the release format (MERU's and HyCoCLIP's code) holds it, whether
it trains on the dependency parses of the grounded shards, whether it reads them compositionally (whole images with
their boxes' crops and phrases, HyCoCLIP), whether it views whole images as HyCoCLIP's code stores them, and whether
it aligns another experiment's model instead of training one (`hypvl finetune`). Everything that lists methods reads
this registry: recipe checks (`hypvl.train.recipe`), planning (`hypvl.workflow`), model building, extra models'
release format (`hypvl.outside.extras`).

A plug-in is a module listed in config `plugins`, imported (`import_plugins`) by planning and by every command that
trains, imports or evaluates a model, before it reads a spec or a checkpoint. It registers its methods with
`register_method`, as the entries below are, and its model classes with `@register_model("name")`: a model class
(a `hypvl.models.clip.DualEncoder`) with `from_recipe(recipe)` and `recipe()` (`{"model_class": name, ...}`), whose
checkpoints then load anywhere the suite loads one (`hypvl.models.checkpoints`), e.g. as an extra model
`hypvl:<checkpoint.pt>`. Its geometry is what every task reads (the interface: `hypvl.models.clip.DualEncoder`).
Torch-free: a plug-in that only registers methods keeps planning so.
"""

import importlib
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
LIBRARIES = ("open_clip", "transformers")  # the libraries whose public dual encoders load as models of ours

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


MODEL_CLASSES: dict[str, type] = {}  # a checkpoint's recipe `model_class` -> the plug-in's class


def register_model(name: str):
    """Class decorator: registers the class as model class `name` (its checkpoints' recipe `model_class`)."""
    def register(cls):
        if name in MODEL_CLASSES and MODEL_CLASSES[name] is not cls:
            raise InputError(f"model class {name!r} is registered twice ({MODEL_CLASSES[name].__name__}, "
                             f"{cls.__name__})")
        for method in ("from_recipe", "recipe"):
            if not callable(getattr(cls, method, None)):
                raise InputError(f"model class {name!r} ({cls.__name__}) gives no {method}()")
        MODEL_CLASSES[name] = cls
        cls.model_class = name
        return cls
    return register


def build_registered(recipe: dict, source: str):
    """A freshly initialised model of the registered class a recipe names; InputError names `source` when none is."""
    name = recipe["model_class"]
    if name not in MODEL_CLASSES:
        raise InputError(f"{source}: model class {name!r} is not registered (registered: "
                         f"{', '.join(sorted(MODEL_CLASSES)) or 'none'}; list its module in config `plugins`)")
    return MODEL_CLASSES[name].from_recipe(recipe)


def import_plugins(modules) -> None:
    """Import each module of config `plugins` (each registers its methods and model classes): importing runs it,
    arbitrary code with the user's rights (docs/trust.md); InputError names one that fails."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise InputError(f"config: plugins: {module!r} does not import ({exc})") from None
