"""The pilot world (hypvl.worlds.pilot): written in the layouts paper-scale acquisition leaves, fetched from its mirror
through the real acquisition code, and read by the paper-scale readers."""

import importlib
from pathlib import Path

import pytest
import yaml

from hypvl.config import load_config
from hypvl.acquire.fetch import fetch
from hypvl.data.catalog import dataset_names, load_dataset_info
from hypvl.data.formats.breeds import read_breeds_hierarchy, read_breeds_split
from hypvl.data.formats.cc3m import iter_cc3m
from hypvl.data.formats.classification_split import read_classification_split
from hypvl.data.formats.clip_benchmark_wds import read_classnames
from hypvl.data.formats.coco_captions import read_coco_captions
from hypvl.data.formats.coco_instances import read_coco_instances, zero_shot_split
from hypvl.data.formats.flickr30k import read_flickr30k
from hypvl.data.formats.grit import iter_grit
from hypvl.data.formats.hierarcaps import read_hierarcaps_test, read_hierarcaps_train
from hypvl.data.formats.hyperlex import read_hyperlex
from hypvl.data.formats.redcaps import iter_redcaps
from hypvl.data.formats.vg_attribution import read_vg_attribution
from hypvl.data.formats.vlchecklist import read_vlchecklist_corpus
from hypvl.data.formats.wordnet_isa import read_wordnet_isa
from hypvl.data.formats.yfcc import read_yfcc
from hypvl.acquire.manifest import SOURCES_PATH, load_sources
from hypvl.acquire.mirror import Mirror
from hypvl.worlds.pilot.commands import write_pilot_world
from hypvl.worlds.pilot.evalsets import WRITERS
from hypvl.worlds.pilot.manifest import PILOT_SOURCE
from hypvl.data.probe_splits import build_probe_splits
from hypvl.evaluate.linprobe import check_labels_agree
from hypvl.tasks import IMAGE_FOLDERS, NAMED_IMAGE_FOLDERS
from hypvl.train.recipe import resolve_schedule, train_section_for
from hypvl.workflow import Plan

ROOT = Path(__file__).resolve().parents[2]
CONFIG = [ROOT / "workflows/config/full.yaml", ROOT / "workflows/config/pilot.yaml"]
CORPORA = ("grit", "redcaps", "cc3m", "yfcc15m")
EVALUATION = tuple(WRITERS)  # coco_val2017, flickr30k, hierarcaps, wordnet_isa, hyperlex, breeds


@pytest.fixture(scope="module")
def pilot(tmp_path_factory):
    """A small pilot world, and every dataset it holds acquired from its mirror with its manifest."""
    root = tmp_path_factory.mktemp("pilot")
    config = load_config(CONFIG)
    config["data_dir"] = str(root / "data")
    config["fetch"] = {"mirror": str(root / "mirror"), "sources": str(root / "mirror" / "sources.yaml"),
                       "weights": None}
    config["pilot_world"].update(classes=3, images_per_class=2, grit_samples=5, redcaps_samples=3, cc3m_samples=3,
                                 yfcc15m_samples=3, shard_size=2, retrieval_images=3, scene_items=1)
    summary = write_pilot_world(config)
    sources = load_sources(config["fetch"]["sources"])
    for name in [*dataset_names(), *CORPORA, *EVALUATION]:
        fetch(name, Path(config["data_dir"]) / config["acquire"][name], sources=sources,
              mirror=Mirror.at(config["fetch"]["mirror"]))
    return config, summary


def dest(config, name: str) -> Path:
    return Path(config["data_dir"]) / config["acquire"][name]


def test_every_classification_set_is_read_in_its_catalog_layout(pilot):
    config, _ = pilot
    split = config["eval"]["classification_split"]
    for name in dataset_names():
        info, folder = load_dataset_info(name), dest(config, name)
        dataset = read_classification_split(folder, split)
        labels = list(dataset.labels)
        assert dataset.layout == info.layout, name
        if info.layout == "clip_benchmark_wds":
            assert read_classnames(folder) == info.class_names, name
        elif name == "imagenet":  # WordNet ids, in label order
            assert dataset.class_dirs == tuple(sorted(dataset.class_dirs)) and dataset.class_dirs[0] == "n01440764"
        assert sorted(labels) == [label for label in range(min(3, info.num_classes)) for _ in range(2)], name


def test_the_linear_probe_is_cut_from_sources_in_the_real_layouts_with_the_pilots_options(pilot, tmp_path):
    """Every linear-probe set's sources lie where the user places them, in the layout the real ones come in; the
    probe_splits job's options (scaled-down sources, the pilot's class cap) cut train and val holding each of the
    evaluated classes, with the class folders of the set's test split as the linear probe reads it."""
    config, summary = pilot
    options = Plan(config).data.probe_splits_options()
    assert options == ["--scaled-source", "--max-classes", str(config["eval"]["max_classes"])]
    cap = 3  # the fixture's world gives 3 classes images
    probed = [name for name in dataset_names() if load_dataset_info(name).linear_probe is not None]
    assert sorted(summary["written"]["probe_sources"]) == probed and len(probed) == 19
    for name in probed:
        info = load_dataset_info(name)
        source = Path(config["data_dir"]) / config["eval"]["probe_source_dir"] / name
        train_split = info.linear_probe[0].split
        assert read_classification_split(source, train_split).layout == info.layout, name
        sizes = build_probe_splits(info, source, tmp_path / name, scaled=True, max_classes=cap)
        test = read_classification_split(dest(config, name), config["eval"]["classification_split"]).first_classes(cap)
        cuts = [read_classification_split(tmp_path / name, split) for split in ("train", "val")]
        check_labels_agree([*cuts, test])  # what the linear probe checks
        for split, cut in zip(("train", "val"), cuts):
            assert cut.num_classes == min(cap, info.num_classes), (name, split)
            assert set(cut.labels) == set(range(cut.num_classes)) and sizes[split] == len(cut), (name, split)
        assert sizes["train"] >= 2 * min(cap, info.num_classes), name  # images_per_class in the train slice


def test_the_raw_corpora_are_read_where_the_prepare_steps_leave_them(pilot):
    config, _ = pilot
    raw = {corpus: Path(config["data_dir"]) / entry["path"] for corpus, entry in config["grounding"]["raw"].items()}
    grit, redcaps = list(iter_grit(raw["grit"])), list(iter_redcaps(raw["redcaps"]))
    assert len(grit) == 5 and all(sample.noun_chunks for sample in grit)
    assert len(redcaps) == 3 and all(sample.subreddit for sample in redcaps)
    cc3m, hierarcaps = list(iter_cc3m(raw["cc3m"])), read_hierarcaps_train(
        Path(config["data_dir"]) / config["eval"]["datasets"]["hierarcaps_train"])
    assert len(cc3m) == 3 + 3  # the corpus, and the HierarCaps training rows' pictures found by their captions
    assert {pair.positive[-1] for pair in hierarcaps} <= {sample.caption for sample in cc3m}
    assert Path(config["data_dir"]) / config["eval"]["datasets"]["hierarcaps_train_images"] == raw["cc3m"]
    assert len(read_yfcc(raw["yfcc15m"])) == 3
    assert (dest(config, "grit") / "metadata" / "grit-20m" / "coyo_0_snappy.parquet").is_file()
    assert (dest(config, "redcaps") / "annotations").is_dir()


def test_the_pilot_manifest_is_the_real_one_but_for_the_digests_of_its_stand_ins(pilot):
    config, summary = pilot
    real, derived = load_sources(SOURCES_PATH), load_sources(config["fetch"]["sources"])
    assert real.keys() == derived.keys()
    changed = 0
    for name, entry in real.items():
        items = entry.get("files", []) + [item for item in entry.get("expected", []) if isinstance(item, dict)]
        others = derived[name].get("files", []) + [i for i in derived[name].get("expected", []) if isinstance(i, dict)]
        for item, other in zip(items, others):
            key = item.get("url", f"{name}:{item.get('path')}")
            restamped = bool(item.get("sha256") or item.get("md5")) and key in summary["served"]
            changed += restamped
            assert {k: v for k, v in other.items() if k not in ("sha256", "md5", "checksum_source")} == \
                {k: v for k, v in item.items() if k not in ("sha256", "md5", "checksum_source")}
            assert (other == item) != restamped
            if restamped:
                assert other["checksum_source"].startswith(PILOT_SOURCE)
        assert {k: v for k, v in derived[name].items() if k not in ("files", "expected")} == \
            {k: v for k, v in entry.items() if k not in ("files", "expected")}
    assert changed >= 6  # ImageNet's two archives, CUB, SUN397 (2), CLEVR, RedCaps: published digests replaced
    yaml.safe_load(Path(config["fetch"]["sources"]).read_text())


def test_every_path_the_readers_need_is_where_acquisition_and_the_prepare_steps_leave_it(pilot):
    """What each acquire job checks (`--ready`: the files of config `eval.datasets` and the image folders their
    readers default to) is there once the pilot world's datasets are fetched, and the readers read it."""
    config, _ = pilot
    plan = Plan(config)
    for name in EVALUATION:
        ready = plan.data.acquisition_ready(name)
        assert ready and all(Path(path).exists() for path in ready), (name, ready)
    assert str(dest(config, "flickr30k") / "flickr30k_images") in plan.data.acquisition_ready("flickr30k")
    assert str(dest(config, "hierarcaps") / "assets" / "test_imgs") in plan.data.acquisition_ready("hierarcaps")
    assert {str(dest(config, "vl_checklist") / folder) for folder in ("vg", "swig", "hake")} <= set(
        plan.data.acquisition_ready("vl_checklist"))  # the IMG_ROOTs of VL-CheckList's corpus YAMLs
    path = {key: Path(config["data_dir"]) / relative for key, relative in config["eval"]["datasets"].items()}
    captions, instances = read_coco_captions(path["coco_captions"]), read_coco_instances(path["coco_instances"])
    assert len(captions) == len(instances.images) == 3 and all(len(item.captions) == 5 for item in captions)
    assert len(instances.categories) == 80 and len(zero_shot_split(instances, path["coco_instances"])[1]) == 17
    assert all(item.image.parent == dest(config, "coco_val2017") / "val2017" for item in captions)
    assert len(read_flickr30k(path["flickr30k"], split="test")) == 3
    assert len(read_hierarcaps_test(path["hierarcaps_test"])) == 3 and len(read_hierarcaps_train(
        path["hierarcaps_train"])) == 3
    assert read_hyperlex(path["hyperlex"]) and len(read_wordnet_isa(path["imagenet_isa"])) == 1500
    hierarchy = read_breeds_hierarchy(path["breeds"])
    split = read_breeds_split(path["breeds"] / "entity2.json", hierarchy)
    assert len(hierarchy.classes) == 1000 and [(s.source, s.target) for s in split] == [((0,), (1,)), ((2,), (3,))]
    corpora = sorted((path["vlchecklist"] / "corpus").rglob("*.yaml"))  # the archive's top folder dropped
    assert len(corpora) == 13 and all(len(read_vlchecklist_corpus(corpus)[1]) == 1 for corpus in corpora)
    assert {read_vlchecklist_corpus(corpus)[0].image_root.name for corpus in corpora} <= set(
        NAMED_IMAGE_FOLDERS["vlchecklist"])  # the folders acquisition checks are those the corpus YAMLs name
    swig = path["vlchecklist"] / "swig"  # IMG_ROOT swig/ of the real SWiG corpora: the zip's images_512/ dropped
    assert [p.name for p in swig.iterdir() if p.suffix == ".jpg"] == ["standin_1.jpg"]
    assert len(read_vg_attribution(path["vg_attribution"])) == 10  # a picture per pair of the 5 patterns


def test_the_image_folders_acquisition_checks_are_the_readers_defaults(tmp_path):
    formats = {"coco_captions": "coco_captions", "coco_instances": "coco_instances", "flickr30k": "flickr30k",
               "hierarcaps_test": "hierarcaps", "vg_attribution": "vg_attribution"}
    assert formats.keys() == IMAGE_FOLDERS.keys()
    for key, folder in IMAGE_FOLDERS.items():
        module = importlib.import_module(f"hypvl.data.formats.{formats[key]}")
        data = tmp_path / "a" / "b" / "file"
        assert module.default_image_root(data).resolve() == (data.parent / folder).resolve(), key


def test_every_model_the_pilot_trains_takes_its_step_count():
    """`train.steps` at the pilot, whatever `steps_for` entry a lower config layer holds (full.yaml's null for PoinCLIP's
    grid: its paper schedule, 6k steps)."""
    config = load_config(CONFIG)
    plan = Plan(config)
    steps = {experiment: resolve_schedule(plan.experiment(experiment).overrides,
                                          train_section_for(experiment, config["train"])).steps
             for experiment in plan.experiments() if plan.trains(experiment)}
    assert len(steps) > 60 and set(steps.values()) == {config["train"]["steps"]}, \
        {e: s for e, s in steps.items() if s != config["train"]["steps"]}
