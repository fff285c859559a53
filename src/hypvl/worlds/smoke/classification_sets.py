"""The smoke world's classification sets as declarations: which slice of the world each draws and its class names.
Light to import (no drawing code): the task registry reads the class counts to plan (`hypvl.tasks`).

The 16 sets of HyCoCLIP Table 1 slice the world (leaf concept, scene, texture or country); MERU's
four further sets are drawn apart from it, simple but well defined: seven-segment digit glyphs
(mnist), counts of objects (clevr), tissue-like patches with or without dark cell clusters (pcam)
and rendered two-word movie verdicts (sst2). Class names of the extra sets are the catalog's.
"""

from dataclasses import dataclass

from .world import COUNTRIES, SCENES, TEXTURES, leaf_concepts

CIFAR10_LEAVES = ["beagle", "siamese", "sparrow", "eagle", "sedan", "truck", "airliner", "pizza", "rose", "husky"]
STL10_LEAVES = ["poodle", "tabby", "owl", "parrot", "bus", "jeep", "helicopter", "jet", "cake", "tulip"]
CLEVR_COUNTS = ("10", "3", "4", "5", "6", "7", "8", "9")  # MERU's CLEVR-Counts label order
PCAM_CLASSES = ("lymph node", "lymph node containing metastatic tumor tissue")
SST2_CLASSES = ("negative", "positive")


@dataclass(frozen=True)
class ClassificationSet:
    """How a smoke classification set slices the world: what its label is and how it is drawn."""

    label: str           # leaf | scene | texture | country | digit | count | tissue | sentiment
    classes: tuple[str, ...]
    style: str = "normal"  # normal | lowres | large | scene | satellite | texture | country


def _leaves(*basics: str) -> tuple[str, ...]:
    return tuple(c.name for c in leaf_concepts() if not basics or c.basic in basics)


CLASSIFICATION_SETS = {
    "imagenet": ClassificationSet("leaf", _leaves()),
    "cifar10": ClassificationSet("leaf", tuple(CIFAR10_LEAVES), "lowres"),
    "cifar100": ClassificationSet("leaf", _leaves(), "lowres"),
    "sun397": ClassificationSet("scene", tuple(SCENES), "scene"),
    "caltech101": ClassificationSet("leaf", _leaves(), "large"),
    "stl10": ClassificationSet("leaf", tuple(STL10_LEAVES), "large"),
    "food101": ClassificationSet("leaf", _leaves("dish")),
    "cub": ClassificationSet("leaf", _leaves("bird")),
    "cars": ClassificationSet("leaf", _leaves("car")),
    "aircraft": ClassificationSet("leaf", _leaves("aircraft")),
    "pets": ClassificationSet("leaf", _leaves("dog", "cat")),
    "flowers": ClassificationSet("leaf", _leaves("flower")),
    "dtd": ClassificationSet("texture", tuple(TEXTURES), "texture"),
    "eurosat": ClassificationSet("scene", ("forest", "desert", "ocean", "farmland", "city", "snowfield"), "satellite"),
    "resisc45": ClassificationSet("scene", tuple(SCENES), "scene"),
    "country211": ClassificationSet("country", tuple(COUNTRIES), "country"),
}
"""The 16 sets of HyCoCLIP Table 1 (and MERU Table 2 less its four below)."""

MERU_EXTRA_SETS = {
    "mnist": ClassificationSet("digit", tuple(str(d) for d in range(10))),
    "clevr": ClassificationSet("count", CLEVR_COUNTS),
    "pcam": ClassificationSet("tissue", PCAM_CLASSES),
    "sst2": ClassificationSet("sentiment", SST2_CLASSES),
}
"""MERU's four further zero-shot and linear-probe sets (Tables 2 and 7)."""

ALL_CLASSIFICATION_SETS = {**CLASSIFICATION_SETS, **MERU_EXTRA_SETS}
