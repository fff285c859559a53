"""Write the smoke world to disk in the real formats: raw training corpora, classification image
folders and every evaluation set, plus `manifest.json` listing what was written.

Every picture is drawn from its own random generator seeded by (seed, set, index), so any file can be
regenerated alone and the whole world is identical across runs and machines. Grounding the raw
corpora into HyCoCLIP's grounded shards is the next step (`hypvl ground`).
"""

import json
from pathlib import Path

from hypvl.io import atomic_write

from . import evalsets
from .classification import ALL_CLASSIFICATION_SETS, CLASSIFICATION_SETS, MERU_EXTRA_SETS, write_classification_set
from .corpora import write_corpus
from .settings import WorldSettings
from .world import COCO_CATEGORY_OF, TAXONOMY, isa_edges

__all__ = ["CLASSIFICATION_SETS", "MERU_EXTRA_SETS", "WorldSettings", "build_world"]

EVAL_DATASETS = ("coco_captions", "coco_instances", "flickr30k", "imagenet_isa", "vlchecklist", "vg_attribution",
                 "hierarcaps_test", "hierarcaps_train", "hyperlex", "breeds")


def build_world(settings: WorldSettings, out: Path, raw_corpora: dict[str, str], datasets: dict[str, str],
                classification_dir: str = "eval/classification") -> dict:
    """Write the world under `out`; returns (and writes) the manifest.

    raw_corpora: corpus name (grit | redcaps | cc3m) -> raw shard folder under `out` (config
    `grounding.raw.<corpus>.path`); datasets: config `eval.datasets` (name -> path under `out`);
    classification_dir: config `eval.classification_dir`.
    """
    out = Path(out)
    missing = [name for name in EVAL_DATASETS if name not in datasets]
    if missing:
        raise ValueError(f"eval.datasets lacks {missing}")
    counts = {"grit": settings.grit_samples, "redcaps": settings.redcaps_samples, "cc3m": settings.cc3m_samples}
    manifest = {"settings": settings.as_dict(), "corpora": {}, "classification": {}, "eval": {}}
    for corpus, folder in raw_corpora.items():
        shards = write_corpus(settings, corpus, out / folder, counts[corpus])
        manifest["corpora"][corpus] = {"format": corpus, "samples": counts[corpus],
                                       "shards": [str(p.relative_to(out)) for p in shards]}
    for name in ALL_CLASSIFICATION_SETS:
        manifest["classification"][name] = write_classification_set(settings, name, out / classification_dir)
    path = {name: out / datasets[name] for name in EVAL_DATASETS}
    manifest["eval"] = {
        "coco": evalsets.write_coco(settings, path["coco_captions"], path["coco_instances"]),
        "flickr30k": evalsets.write_flickr(settings, path["flickr30k"]),
        "vlchecklist": evalsets.write_vlchecklist_sets(settings, path["vlchecklist"]),
        "vg_attribution": evalsets.write_vg_attribution_set(settings, path["vg_attribution"]),
        "hierarcaps": evalsets.write_hierarcaps_sets(settings, path["hierarcaps_test"], path["hierarcaps_train"]),
        "imagenet_isa": evalsets.write_wordnet(path["imagenet_isa"]),
        "hyperlex": evalsets.write_hyperlex_set(settings, path["hyperlex"]),
        "breeds": evalsets.write_breeds_sets(path["breeds"], CLASSIFICATION_SETS["imagenet"].classes),
    }
    manifest["paths"] = {"classification": classification_dir, **{n: datasets[n] for n in EVAL_DATASETS},
                         **{f"raw_{c}": f for c, f in raw_corpora.items()}}
    manifest["hierarchy"] = {"isa": isa_edges(), "taxonomy": {k: list(v) for k, v in TAXONOMY.items()},
                             "coco_category_of": COCO_CATEGORY_OF}
    with atomic_write(out / "manifest.json") as handle:
        json.dump(manifest, handle, indent=1)
    return manifest
