"""VL-CheckList (ITC, grouped as upstream) and VG-Attribution (crop, macro accuracy over pairs): numbers
against per-item scoring by hand, NaN refusal."""

from collections import defaultdict
from pathlib import Path

import pytest
import torch

from helpers.eval_sets import NOUNS, _attribution
from helpers.evaluation import SIZE, context, embed_one_by_one, embed_texts_one_by_one, nan_images, random_image
from hypvl.data.formats.imagefolder import load_image
from hypvl.data.formats.vlchecklist import CheckListItem, write_corpus, write_vlchecklist
from hypvl.worlds.smoke.settings import WorldSettings
from hypvl.worlds.smoke.vlchecklist_sets import write_vlchecklist_sets
from hypvl.data.transforms import resize_center_crop
from hypvl.errors import InputError
from hypvl.evaluate import scene
from hypvl.evaluate.metrics.checks import NonFiniteEmbeddingError


def _correct(model, tokenizer, images, positives, negatives) -> list[bool]:
    """Oracle: each image scored alone against its two captions; ties are wrong."""
    img = embed_one_by_one(model, images, lambda im: resize_center_crop(im, SIZE))
    with torch.no_grad():
        pos = model.similarity(img, embed_texts_one_by_one(model, tokenizer, positives)).diagonal()
        neg = model.similarity(img, embed_texts_one_by_one(model, tokenizer, negatives)).diagonal()
    return (pos > neg).tolist()


def _checklist(root, g):
    """Object/Size/{large,small} with two sources each, Object/Location/center with one, Attribute/color."""
    layout = {("Object", "Size", "large"): ["vg_obj", "swig_agent"], ("Object", "Size", "small"): ["vg_obj", "hake"],
              ("Object", "Location", "center"): ["vg_subj"], ("Attribute", "color"): ["vg"]}
    written = {}
    for n, (folders, sources) in enumerate(layout.items()):
        for m, source in enumerate(sources):
            items = []
            for i in range(3 + n + m):
                path = root / "vg" / f"{n}_{m}_{i}.jpg"
                path.parent.mkdir(parents=True, exist_ok=True)
                random_image(g, 20, 18 + i % 4).save(path)
                items.append(CheckListItem(path, (f"a {NOUNS[i % 8]} on the left", "spare"),
                                           (f"a {NOUNS[(i + 3) % 8]} on the left",)))
            annotation = root / "data" / "_".join(folders) / f"{source}.json"
            write_vlchecklist(annotation, items, root / "vg")
            write_corpus(root / "corpus" / "v1" / "/".join(folders) / f"{source}.yaml", annotation, root / "vg", root)
            written[(folders, source)] = items
    return written


@pytest.mark.parametrize("method", ["clip", "meru"])
def test_checklist_object_aggregates_sources_then_groups_then_categories(tmp_path, method):
    written = _checklist(tmp_path / "vlc", torch.Generator().manual_seed(0))
    ctx = context(method, tmp_path, {"vlchecklist": "vlc"})
    result = scene.run(ctx, "vlc_object")
    accuracy = {}
    for (folders, source), items in written.items():
        if folders[0] == "Object":
            ok = _correct(ctx.model, ctx.tokenizer, [load_image(it.image) for it in items],
                          [it.positives[0] for it in items], [it.negatives[0] for it in items])
            accuracy[(folders, source)] = 100 * sum(ok) / len(ok)
    large = (accuracy[(("Object", "Size", "large"), "vg_obj")] + accuracy[(("Object", "Size", "large"), "swig_agent")]) / 2
    small = (accuracy[(("Object", "Size", "small"), "vg_obj")] + accuracy[(("Object", "Size", "small"), "hake")]) / 2
    center = accuracy[(("Object", "Location", "center"), "vg_subj")]
    expected = {"size_large": large, "size_small": small, "location_center": center, "size": (large + small) / 2,
                "location": center, "accuracy": ((large + small) / 2 + center) / 2}
    assert result.metrics == pytest.approx(expected, abs=1e-6)
    assert result.n_samples == sum(len(v) for (f, _), v in written.items() if f[0] == "Object")
    attribute = scene.run(ctx, "vlc_attribute")
    assert set(attribute.metrics) == {"accuracy", "color"} and attribute.metrics["accuracy"] == attribute.metrics["color"]


def test_source_weighted_mean_hand_built_corpus():
    # Object/Size/large as upstream's corpus.json: vg (vg_obj, vg_subj), swig (4 files), hake (1 file).
    accuracies = {Path("vg_obj.yaml"): 60.0, Path("vg_subj.yaml"): 80.0, Path("swig_agent.yaml"): 40.0,
                  Path("swig_destination.yaml"): 50.0, Path("swig_item.yaml"): 70.0, Path("swig_tool.yaml"): 80.0,
                  Path("hake.yaml"): 90.0}
    # vg 70, swig 60, hake 90: (70 + 60 + 90) / 3 = 73.33..., where the file-weighted mean is 67.14...
    assert scene.source_weighted_mean(accuracies) == pytest.approx(220 / 3)
    assert sum(accuracies.values()) / len(accuracies) == pytest.approx(470 / 7)


def test_checklist_group_weights_sources_equally(tmp_path):
    # Object/Size/large holds two vg files and one swig file: the group is (mean(vg) + swig) / 2.
    root, g = tmp_path / "vlc", torch.Generator().manual_seed(2)
    files = {}
    for m, source in enumerate(["vg_obj", "vg_subj", "swig_agent"]):
        items = []
        for i in range(4 + 3 * m):
            path = root / "img" / f"{m}_{i}.jpg"
            path.parent.mkdir(parents=True, exist_ok=True)
            random_image(g, 20, 18 + i % 4).save(path)
            items.append(CheckListItem(path, (f"a {NOUNS[i % 8]} here",), (f"a {NOUNS[(i + 5) % 8]} here",)))
        annotation = root / "data" / f"{source}.json"
        write_vlchecklist(annotation, items, root / "img")
        write_corpus(root / "corpus" / "v1" / "Object" / "Size" / "large" / f"{source}.yaml", annotation,
                     root / "img", root)
        files[source] = items
    ctx = context("clip", tmp_path, {"vlchecklist": "vlc"})
    accuracy = {}
    for source, items in files.items():
        ok = _correct(ctx.model, ctx.tokenizer, [load_image(it.image) for it in items],
                      [it.positives[0] for it in items], [it.negatives[0] for it in items])
        accuracy[source] = 100 * sum(ok) / len(ok)
    result = scene.run(ctx, "vlc_object")
    expected = ((accuracy["vg_obj"] + accuracy["vg_subj"]) / 2 + accuracy["swig_agent"]) / 2
    assert expected != pytest.approx(sum(accuracy.values()) / 3)  # the case tells the two weightings apart
    assert result.metrics["size_large"] == pytest.approx(expected, abs=1e-6)
    assert result.metrics["accuracy"] == pytest.approx(expected, abs=1e-6)


def test_checklist_missing_images_are_an_error_or_skipped_before_the_cap(tmp_path):
    written = _checklist(tmp_path / "vlc", torch.Generator().manual_seed(0))
    items = written[(("Attribute", "color"), "vg")]
    items[0].image.unlink()
    items[2].image.unlink()
    ctx = context("clip", tmp_path, {"vlchecklist": "vlc"})
    with pytest.raises(InputError, match="image"):
        scene.run(ctx, "vlc_attribute")
    result = scene.evaluate_checklist(ctx, tmp_path / "vlc", "Attribute", "vlc_attribute", items_per_corpus=2,
                                      skip_missing=True)
    kept = [items[1], items[3]]  # the first two items whose image exists
    ok = _correct(ctx.model, ctx.tokenizer, [load_image(it.image) for it in kept],
                  [it.positives[0] for it in kept], [it.negatives[0] for it in kept])
    assert result.n_samples == 2 and result.metrics["skipped_images"] == 2
    assert result.metrics["accuracy"] == pytest.approx(50 * sum(ok), abs=1e-6)
    ctx.config["eval"]["vlchecklist_skip_missing"] = True
    assert scene.run(ctx, "vlc_attribute").metrics["skipped_images"] == 2


def test_checklist_caps_items_per_corpus(tmp_path):
    written = _checklist(tmp_path / "vlc", torch.Generator().manual_seed(0))
    ctx = context("clip", tmp_path, {"vlchecklist": "vlc"})
    result = scene.evaluate_checklist(ctx, tmp_path / "vlc", "Attribute", "vlc_attribute", items_per_corpus=2)
    items = written[(("Attribute", "color"), "vg")][:2]
    ok = _correct(ctx.model, ctx.tokenizer, [load_image(it.image) for it in items],
                  [it.positives[0] for it in items], [it.negatives[0] for it in items])
    assert result.n_samples == 2 and result.metrics["accuracy"] == pytest.approx(50 * sum(ok), abs=1e-6)


def test_smoke_world_checklist_has_the_syntax_vse_table3_groups(tmp_path):
    write_vlchecklist_sets(WorldSettings(vlchecklist_per_group=2), tmp_path / "vlc")
    ctx = context("clip", tmp_path, {"vlchecklist": "vlc"})
    for task, groups in (("vlc_attribute", {"color", "size", "material", "state", "action"}),
                         ("vlc_relation", {"spatial", "action"})):
        result = scene.run(ctx, task)
        assert set(result.metrics) == {"accuracy"} | groups and result.n_samples == 2 * len(groups)
        assert result.metrics["accuracy"] == pytest.approx(sum(result.metrics[g] for g in groups) / len(groups))


@pytest.mark.parametrize("method", ["clip", "meru"])
def test_vg_attribution_is_macro_accuracy_over_frequent_pairs_of_box_crops(tmp_path, method):
    items = _attribution(tmp_path, torch.Generator().manual_seed(1))
    ctx = context(method, tmp_path, {"vg_attribution": "aro/visual_genome_attribution.json"},
                  vg_attribution_min_count=5)
    result = scene.run(ctx, "vg_attribution")
    crops = []
    for it in items:
        x, y, w, h = it.bbox  # oracle crop: PIL box with the edges rounded outwards
        crops.append(load_image(it.image).crop((int(x), int(y), int(-(-(x + w) // 1)), int(-(-(y + h) // 1)))))
    ok = _correct(ctx.model, ctx.tokenizer, crops, [it.true_caption for it in items],
                  [it.false_caption for it in items])
    groups = defaultdict(list)
    for it, hit in zip(items, ok):
        groups[it.attributes].append(hit)
    kept = [100 * sum(v) / len(v) for v in groups.values() if len(v) >= 5]  # 14 = 5 + 5 + 4: one pair dropped
    assert len(kept) == 2
    assert result.metrics["accuracy"] == pytest.approx(sum(kept) / len(kept), abs=1e-6)
    assert result.n_samples == 14


def test_nan_embeddings_are_an_error(tmp_path):
    _attribution(tmp_path, torch.Generator().manual_seed(1))
    ctx = context("meru", tmp_path, {"vg_attribution": "aro/visual_genome_attribution.json"})
    nan_images(ctx.model)
    with pytest.raises(NonFiniteEmbeddingError, match="vg_attribution image embeddings"):
        scene.run(ctx, "vg_attribution")


def test_skip_missing_flag_is_offered_by_the_scene_command_only():
    from hypvl.cli import build_parser

    base = ["--experiment", "e", "--checkpoint", "c.pt", "--out-dir", "o"]
    parser = build_parser()
    assert parser.parse_args(["evaluate", "scene", *base, "--vlchecklist-skip-missing"]).vlchecklist_skip_missing
    assert not parser.parse_args(["evaluate", "scene", *base]).vlchecklist_skip_missing
    with pytest.raises(SystemExit):
        parser.parse_args(["evaluate", "detection", *base, "--vlchecklist-skip-missing"])
