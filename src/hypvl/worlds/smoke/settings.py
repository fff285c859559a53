"""Sizes of the smoke world and the seeded random generator every picture and record is drawn from."""

import zlib
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class WorldSettings:
    """Sizes of the smoke world (config `smoke_world`); every count is per set or corpus."""

    seed: int = 0
    image_size: int = 64
    grit_samples: int = 5000
    redcaps_samples: int = 3000
    cc3m_samples: int = 1000
    yfcc15m_samples: int = 3000
    per_class: int = 20               # classification test images per class
    probe_train_per_class: int = 10   # linear-probe (MERU Table 7) train slice images per class, at least
    probe_val_per_class: int = 5      # images per class of a linear-probe val split held apart
    retrieval_images: int = 100       # COCO val2017-like and Flickr30K-test-like images
    vlchecklist_per_group: int = 40   # items per VL-CheckList corpus file
    vg_attribution_per_pair: int = 25  # items per attribute pair (ARO keeps pairs with >= 25)
    hierarcaps_test: int = 100
    hierarcaps_train: int = 200
    shard_size: int = 1000

    def as_dict(self) -> dict:
        return asdict(self)


def rng_for(seed: int, name: str, index: int) -> np.random.Generator:
    """The generator of item `index` of set `name`: each item can be redrawn alone, identically."""
    return np.random.default_rng([seed, zlib.crc32(name.encode()), index])
