"""hier_imagenet: TIE, LCA, Jaccard, hP, hR of the zero-shot ImageNet predictions against networkx on the
is-a graph; class -> wnid through wnid folders or words.txt; NaN refusal."""

import networkx as nx
import pytest
import torch

from helpers.evaluation import SIZE, context, embed_one_by_one, nan_images, random_image
from hypvl.data.formats.imagefolder import load_image, write_imagefolder
from hypvl.data.formats.wordnet_isa import IsaEdge, write_wordnet_isa
from hypvl.data.transforms import resize_center_crop
from hypvl.errors import InputError
from hypvl.evaluate import hierarchical
from hypvl.evaluate.metrics.checks import NonFiniteEmbeddingError

CLASSES = ["beagle", "tabby", "sedan", "bus", "tulip"]
WNID = {name: f"n{i:08d}" for i, name in enumerate(["entity", "animal", "vehicle", "plant", "pet", *CLASSES])}
EDGES = [("entity", "animal"), ("entity", "vehicle"), ("entity", "plant"), ("animal", "beagle"), ("animal", "tabby"),
         ("pet", "beagle"), ("pet", "tabby"), ("entity", "pet"), ("vehicle", "sedan"), ("vehicle", "bus"),
         ("plant", "tulip")]  # a DAG: beagle and tabby have two parents


def _world(tmp_path, wnid_folders: bool):
    g = torch.Generator().manual_seed(2)
    items = []
    for i in range(15):
        image = random_image(g)
        image.paste((40 * (i % 5), 200 - 30 * (i % 5), 90), (0, 0, 8 + i, 10))  # class-ish structure
        items.append((i % 5, image))
    root = tmp_path / "classification" / "imagenet"
    write_imagefolder(root, "test", CLASSES, items)
    if wnid_folders:
        for label, name in enumerate(CLASSES):
            (root / "test" / f"{label:04d}").rename(root / "test" / WNID[name])
    write_wordnet_isa(tmp_path / "wordnet" / "imagenet_isa.txt", [IsaEdge(WNID[p], WNID[c]) for p, c in EDGES])
    (tmp_path / "wordnet" / "words.txt").write_text("".join(f"{w}\t{n}, other {n}\n" for n, w in WNID.items()))
    return root


def _oracle(ctx, root) -> dict[str, float]:
    """Predictions scored one by one, metrics from networkx ancestor sets and undirected shortest paths."""
    from hypvl.data.catalog import load_dataset_info
    from hypvl.data.formats.imagefolder import read_imagefolder

    dataset = read_imagefolder(root, "test")
    model = ctx.model
    prompts = list(load_dataset_info("imagenet").prompts)
    with torch.no_grad():
        classes = model.ensemble_prompts(torch.stack([model.text_features(ctx.tokenizer([p.format(c) for p in prompts]))
                                                      for c in CLASSES]))
        images = embed_one_by_one(model, [load_image(p) for p, _ in dataset.samples],
                                  lambda im: resize_center_crop(im, SIZE))
        pred = model.similarity(images, classes).argmax(1).tolist()
    graph = nx.DiGraph([(WNID[p], WNID[c]) for p, c in EDGES])
    values = {"tie": [], "lca": [], "jaccard": [], "h_precision": [], "h_recall": []}
    for p, (_, t) in zip(pred, dataset.samples):
        a, b = WNID[CLASSES[p]], WNID[CLASSES[t]]
        pa, ta = nx.ancestors(graph, a), nx.ancestors(graph, b)
        values["tie"].append(nx.shortest_path_length(graph.to_undirected(), a, b))
        values["lca"].append(len(pa - ta) + 1)
        values["jaccard"].append(len(pa & ta) / len(pa | ta))
        values["h_precision"].append(len(pa & ta) / len(pa))
        values["h_recall"].append(len(pa & ta) / len(ta))
    return {name: sum(v) / len(v) for name, v in values.items()}


@pytest.mark.parametrize("method,wnid_folders", [("clip", True), ("meru", False)])
def test_hierarchical_metrics_match_networkx(tmp_path, method, wnid_folders):
    root = _world(tmp_path, wnid_folders)
    ctx = context(method, tmp_path, {"imagenet_isa": "wordnet/imagenet_isa.txt"})
    result = hierarchical.run(ctx, "hier_imagenet")
    assert result.n_samples == 15
    assert result.metrics == pytest.approx(_oracle(ctx, root), abs=1e-6)


def test_class_names_must_map_to_one_wnid(tmp_path):
    _world(tmp_path, wnid_folders=False)
    (tmp_path / "wordnet" / "words.txt").write_text(f"{WNID['beagle']}\tbeagle\n")
    ctx = context("clip", tmp_path, {"imagenet_isa": "wordnet/imagenet_isa.txt"})
    with pytest.raises(InputError, match="words.txt: class name 'tabby' names 0 wnids"):
        hierarchical.run(ctx, "hier_imagenet")


def test_nan_embeddings_are_an_error(tmp_path):
    _world(tmp_path, wnid_folders=True)
    ctx = context("meru", tmp_path, {"imagenet_isa": "wordnet/imagenet_isa.txt"})
    nan_images(ctx.model)
    with pytest.raises(NonFiniteEmbeddingError, match="imagenet image embeddings"):
        hierarchical.run(ctx, "hier_imagenet")
