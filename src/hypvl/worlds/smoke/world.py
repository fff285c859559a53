"""The smoke world: a small visual world with a real concept hierarchy.

Every leaf concept (e.g. ``beagle``) is a basic-level category (``dog``) rendered in its own colour;
each basic-level category has its own shape, and basic-level categories group into superordinate
ones (``animal``) under the root ``entity``. Scenes (backgrounds), textures (surface patterns) and
countries (a coloured band) are further visual factors that captions mention and that some
classification sets are about.
"""

from dataclasses import dataclass

ROOT = "entity"

# superordinate -> basic-level category -> (shape, leaves as (name, colour))
TAXONOMY = {
    "animal": {
        "dog": ("circle", [("beagle", "orange"), ("poodle", "white"), ("husky", "blue"), ("pug", "brown")]),
        "cat": ("square", [("siamese", "yellow"), ("persian", "purple"), ("tabby", "orange"), ("sphynx", "pink")]),
        "bird": ("triangle", [("sparrow", "brown"), ("eagle", "red"), ("owl", "white"), ("parrot", "green")]),
    },
    "vehicle": {
        "car": ("wide", [("sedan", "red"), ("truck", "blue"), ("bus", "yellow"), ("jeep", "green")]),
        "aircraft": ("cross", [("airliner", "white"), ("helicopter", "red"), ("glider", "cyan"), ("jet", "purple")]),
    },
    "food": {
        "dish": ("ring", [("pizza", "red"), ("burger", "brown"), ("salad", "green"), ("cake", "pink")]),
    },
    "plant": {
        "flower": ("diamond", [("rose", "red"), ("tulip", "purple"), ("daisy", "white"), ("sunflower", "yellow")]),
    },
}

COLOURS = {
    "red": (220, 40, 40), "green": (40, 170, 60), "blue": (40, 80, 220), "yellow": (240, 220, 40),
    "orange": (245, 140, 30), "purple": (140, 50, 180), "white": (245, 245, 245), "brown": (120, 70, 30),
    "pink": (250, 130, 190), "cyan": (40, 210, 220),
}

# scene name -> background colour (top, bottom)
SCENES = {
    "beach": ((120, 190, 240), (230, 210, 150)),
    "forest": ((60, 110, 60), (30, 70, 30)),
    "desert": ((250, 200, 120), (210, 160, 90)),
    "snowfield": ((200, 220, 240), (250, 250, 250)),
    "city": ((110, 110, 120), (60, 60, 70)),
    "ocean": ((90, 150, 230), (20, 60, 140)),
    "farmland": ((150, 200, 240), (150, 180, 60)),
    "night": ((10, 10, 40), (30, 30, 60)),
}

TEXTURES = ["plain", "striped", "dotted", "checkered", "banded"]

# country name -> colour of the band across the top of the picture
COUNTRIES = {
    "france": (0, 60, 160), "japan": (230, 230, 230), "brazil": (0, 150, 60), "india": (250, 150, 40),
    "canada": (210, 20, 30), "egypt": (20, 20, 20), "sweden": (250, 210, 0), "peru": (160, 20, 60),
}

# side of an object's square box as a fraction of the picture side; "full": texture close-ups;
# "tiny": distractors below the grounding step's box-size filter
SIZES = {"tiny": (0.08, 0.13), "small": (0.28, 0.40), "large": (0.55, 0.75), "full": (0.85, 1.0)}

# COCO category (of the 48 base / 17 novel split) that each smoke concept plays in the detection set:
# only concepts whose own word is a COCO category name are annotated (leaves first, then basic level),
# so the detection prompts use words the smoke captions teach. 4 base (bird, car, truck, pizza) and
# 4 novel (dog, cat, bus, cake) categories have instances; aircraft, burgers, salads and flowers stay
# unannotated background objects, as non-COCO things are in COCO images.
COCO_CATEGORY_OF = {
    "truck": "truck", "bus": "bus", "pizza": "pizza", "cake": "cake",
    "dog": "dog", "cat": "cat", "bird": "bird", "car": "car",
}


@dataclass(frozen=True)
class Concept:
    """A leaf concept with its ancestry and how it is drawn."""

    name: str
    basic: str
    superordinate: str
    shape: str
    colour: str

    @property
    def ancestors(self) -> tuple[str, ...]:
        """Ancestors from the parent up to the root."""
        return (self.basic, self.superordinate, ROOT)


def leaf_concepts() -> list[Concept]:
    """All leaf concepts, in a fixed order."""
    return [
        Concept(leaf, basic, sup, shape, colour)
        for sup, basics in TAXONOMY.items()
        for basic, (shape, leaves) in basics.items()
        for leaf, colour in leaves
    ]


def concept(name: str) -> Concept:
    """The leaf concept called `name`."""
    for leaf in leaf_concepts():
        if leaf.name == name:
            return leaf
    raise KeyError(f"no leaf concept {name!r} in the smoke world")


def isa_edges() -> list[tuple[str, str]]:
    """(child, parent) edges of the whole hierarchy, leaves to root."""
    edges = []
    for sup, basics in TAXONOMY.items():
        edges.append((sup, ROOT))
        for basic, (_, leaves) in basics.items():
            edges.append((basic, sup))
            edges.extend((leaf, basic) for leaf, _ in leaves)
    return edges


def coco_category(leaf: Concept) -> str | None:
    """The COCO category name a leaf is annotated as (its own name, else its basic level's), or None."""
    return COCO_CATEGORY_OF.get(leaf.name) or COCO_CATEGORY_OF.get(leaf.basic)


def hierarchy_nodes() -> list[str]:
    """Every node of the hierarchy, root first, then level by level (superordinate, basic, leaf)."""
    supers = list(TAXONOMY)
    basics = [basic for sup in supers for basic in TAXONOMY[sup]]
    return [ROOT, *supers, *basics, *(leaf.name for leaf in leaf_concepts())]


def wnid(node: str) -> str:
    """A WordNet-style id for a hierarchy node: 'n' + 8 digits, 'n09000000' + its position in
    `hierarchy_nodes()` (outside the range of real WordNet noun offsets used by ImageNet)."""
    return f"n{9_000_000 + hierarchy_nodes().index(node):08d}"


def depth(node: str) -> int:
    """Edges from the root: entity 0, superordinate 1, basic 2, leaf 3."""
    parents = dict(isa_edges())
    steps = 0
    while node in parents:
        node, steps = parents[node], steps + 1
    return steps
