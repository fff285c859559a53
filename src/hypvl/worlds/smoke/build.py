"""Write the smoke world to disk in the real formats, at the paths paper-scale acquisition leaves them: raw training
corpora (each with a `corpus.json`; CC3M's begins with the HierarCaps train rows' pictures, which upstream finds in
CC3M), classification test folders, the linear-probe sets' source splits and every evaluation set, plus
`manifest.json` listing the evaluation sets.
The corpora and the evaluation sets are written separately, so the workflow grounds a corpus while the
evaluation sets are still being drawn.

Every picture is drawn from its own random generator seeded by (seed, set, index), so any file can be
regenerated alone and the whole world is identical across runs and machines. Grounding the raw
corpora into HyCoCLIP's grounded shards is the next step (`hypvl ground`).
"""

from pathlib import Path

# MANIFEST: at the root of the world, every evaluation set, the settings, the hierarchy
from hypvl.acquire.fingerprint import MANIFEST
from hypvl.io import atomic_directory, write_json

from .classification import write_classification_set
from .classification_sets import ALL_CLASSIFICATION_SETS, CLASSIFICATION_SETS, MERU_EXTRA_SETS
from .corpora import RAW_FORMATS, write_corpus
from .hierarcaps_sets import train_pictures, write_hierarcaps_sets
from .hyperlex_set import write_hyperlex_set
from .probe_sources import probe_source_sets, write_probe_sources
from .retrieval_sets import write_coco, write_flickr
from .settings import WorldSettings
from .taxonomy_sets import write_breeds_sets, write_wordnet
from .vg_attribution_set import write_vg_attribution_set
from .vlchecklist_sets import write_vlchecklist_sets
from .world import COCO_CATEGORY_OF, TAXONOMY, isa_edges

__all__ = ["CLASSIFICATION_SETS", "MERU_EXTRA_SETS", "WorldSettings", "build_world", "write_evaluation_world",
           "write_raw_corpus"]

EVAL_DATASETS = ("coco_captions", "coco_instances", "flickr30k", "imagenet_isa", "vlchecklist", "vg_attribution",
                 "hierarcaps_test", "hierarcaps_train", "hyperlex", "breeds")


CORPUS_SUMMARY = "corpus.json"  # beside a raw corpus's shards: what was written (format, samples, shards)


def write_raw_corpus(settings: WorldSettings, out: Path, corpus: str, folder: str) -> dict:
    """Write raw corpus `corpus` (grit | redcaps | cc3m | yfcc15m) into `out/folder` and its `corpus.json`; returns
    that."""
    counts = {"grit": settings.grit_samples, "redcaps": settings.redcaps_samples, "cc3m": settings.cc3m_samples,
              "yfcc15m": settings.yfcc15m_samples}
    if corpus not in counts:
        raise ValueError(f"unknown corpus {corpus!r} (known: {sorted(counts)})")
    first = train_pictures(settings) if corpus == "cc3m" else []  # HierarCaps' train images live in CC3M
    out = Path(out)
    with atomic_directory(out / folder) as written:  # replaces only a corpus this step wrote (no old shard left)
        shards = write_corpus(settings, corpus, written, counts[corpus], first)
        summary = {"format": RAW_FORMATS[corpus], "samples": len(first) + counts[corpus],
                   "shards": [str(Path(folder) / p.relative_to(written)) for p in shards],
                   "settings": settings.as_dict()}
        write_json(written / CORPUS_SUMMARY, summary, indent=1)
    return summary


def write_evaluation_world(settings: WorldSettings, out: Path, datasets: dict[str, str],
                           classification_dir: str = "eval/classification",
                           probe_source_dir: str = "eval/probe_sources") -> dict:
    """Write every evaluation set under `out` and `manifest.json` listing them; returns the manifest.

    datasets: config `eval.datasets` (name -> path under `out`); classification_dir and probe_source_dir: config
    `eval.classification_dir` (test folders) and `eval.probe_source_dir` (the linear-probe sets' source splits).
    """
    out = Path(out)
    missing = [name for name in EVAL_DATASETS if name not in datasets]
    if missing:
        raise ValueError(f"eval.datasets lacks {missing}")
    manifest = {"settings": settings.as_dict(), "classification": {}, "probe_sources": {}, "eval": {}}
    for name in ALL_CLASSIFICATION_SETS:
        manifest["classification"][name] = write_classification_set(settings, name, out / classification_dir)
    for name in probe_source_sets():
        manifest["probe_sources"][name] = write_probe_sources(settings, name, out / probe_source_dir)
    path = {name: out / datasets[name] for name in EVAL_DATASETS}
    manifest["eval"] = {
        "coco": write_coco(settings, path["coco_captions"], path["coco_instances"]),
        "flickr30k": write_flickr(settings, path["flickr30k"]),
        "vlchecklist": write_vlchecklist_sets(settings, path["vlchecklist"]),
        "vg_attribution": write_vg_attribution_set(settings, path["vg_attribution"]),
        "hierarcaps": write_hierarcaps_sets(settings, path["hierarcaps_test"], path["hierarcaps_train"]),
        "imagenet_isa": write_wordnet(path["imagenet_isa"]),
        "hyperlex": write_hyperlex_set(settings, path["hyperlex"]),
        "breeds": write_breeds_sets(path["breeds"], CLASSIFICATION_SETS["imagenet"].classes),
    }
    manifest["paths"] = {"classification": classification_dir, "probe_sources": probe_source_dir,
                         **{n: datasets[n] for n in EVAL_DATASETS}}
    manifest["hierarchy"] = {"isa": isa_edges(), "taxonomy": {k: list(v) for k, v in TAXONOMY.items()},
                             "coco_category_of": COCO_CATEGORY_OF}
    write_json(out / MANIFEST, manifest, indent=1)
    return manifest


def build_world(settings: WorldSettings, out: Path, raw_corpora: dict[str, str], datasets: dict[str, str],
                classification_dir: str = "eval/classification", probe_source_dir: str = "eval/probe_sources") -> dict:
    """Write the whole world under `out`: every raw corpus (raw_corpora: corpus -> folder under `out`, config
    `grounding.raw.<corpus>.path`) and the evaluation sets; returns the manifest plus the corpora's summaries."""
    corpora = {corpus: write_raw_corpus(settings, out, corpus, folder) for corpus, folder in raw_corpora.items()}
    return {**write_evaluation_world(settings, out, datasets, classification_dir, probe_source_dir),
            "corpora": corpora}
