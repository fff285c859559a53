"""The plug-in point for a new method: a model class of your own, with its own geometry, that every evaluation task
uses without a change to the task code.

A model class is a `hypvl.models.clip.DualEncoder` (or a subclass of one of ours: CLIP, MERU, PoinCLIP...). The tasks
read only its interface: projected features (`image_features`, `text_features`, `trunk_features`), `tokenizer`,
`image_size`, `logit_scale`, and its view and geometry, each a method it may redefine:

    eval_view                     the image view every image task encodes (ours: centre crop, or squeeze by task)
    embed_image, embed_text       projected features -> embeddings
    similarity, ranking_score     zero-shot, retrieval, scene understanding, detection, hierarchical metrics
    entailment_root               the point radii and entailment scores are measured from (None: the origin)
    radius                        HierarCaps' radius retrieval, BREEDS
    exterior_angle                the entailment score: HyperLex, BREEDS
    feature_radius                the radius statistics

Register the class under a name with `@register_model("name")` and give it `from_recipe(recipe)` (a model of the
architecture the recipe describes, freshly initialised) and `recipe()` (what rebuilds it: `{"model_class": name,
...}`). A checkpoint saved with that recipe (`hypvl.models.checkpoints.save_checkpoint`) then loads anywhere the suite
loads one (`load_checkpoint`), e.g. as an extra model `hypvl:<checkpoint.pt>` (config `extra_models`) or by `hypvl
evaluate --source hypvl:<checkpoint.pt>`. Processes find the class by importing the modules config `plugins` lists.
"""

import importlib

from hypvl.errors import InputError

MODEL_CLASSES: dict[str, type] = {}


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
    """Import each module of config `plugins` (each registers its model classes): importing runs it, arbitrary code
    with the user's rights (docs/trust.md); InputError names one that fails."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise InputError(f"config: plugins: {module!r} does not import ({exc})") from None
