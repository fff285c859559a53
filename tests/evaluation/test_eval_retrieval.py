"""Retrieval (ret_coco, ret_flickr30k): recalls against a brute-force ranking of every query, NaN refusal."""

import pytest
import torch

from helpers.eval_sets import _items
from helpers.evaluation import SIZE, context, embed_one_by_one, embed_texts_one_by_one, nan_images, run_group
from hypvl.data.formats.coco_captions import write_coco_captions
from hypvl.data.formats.flickr30k import write_flickr30k
from hypvl.data.formats.imagefolder import load_image
from hypvl.data.transforms import squeeze
from hypvl.evaluate import retrieval
from hypvl.evaluate.metrics.checks import NonFiniteEmbeddingError
from hypvl.tasks import all_tasks


def _brute_force(model, tokenizer, items) -> dict[str, float]:
    """Rank every candidate for every query with a full sort; a query hits when a positive is in the top K."""
    images = embed_one_by_one(model, [load_image(it.image) for it in items], lambda im: squeeze(im, SIZE))
    captions = [c for it in items for c in it.captions]
    owner = [i for i, it in enumerate(items) for _ in it.captions]
    with torch.no_grad():
        sim = model.similarity(images, embed_texts_one_by_one(model, tokenizer, captions))
    out = {}
    for k in (1, 5, 10):
        t2i = [owner[t] in sim[:, t].argsort(descending=True)[:k].tolist() for t in range(len(captions))]
        i2t = [bool(set(sim[i].argsort(descending=True)[:k].tolist()) & {t for t, o in enumerate(owner) if o == i})
               for i in range(len(items))]
        out[f"t2i_r{k}"] = 100 * sum(t2i) / len(t2i)
        out[f"i2t_r{k}"] = 100 * sum(i2t) / len(i2t)
    return out


@pytest.mark.parametrize("method", ["clip", "meru"])
def test_recalls_match_brute_force_in_query_blocks(tmp_path, monkeypatch, method):
    (tmp_path / "val2017").mkdir()
    items = _items(tmp_path / "val2017")
    write_coco_captions(tmp_path / "annotations" / "captions_val2017.json", items)
    monkeypatch.setattr(retrieval, "QUERY_BLOCK", 4)  # several blocks of queries
    ctx = context(method, tmp_path, {"coco_captions": "annotations/captions_val2017.json"})
    result = retrieval.run(ctx, "ret_coco")
    expected = _brute_force(ctx.model, ctx.tokenizer, items)
    assert result.n_samples == 13
    assert set(result.metrics) == {m.name for m in all_tasks("smoke")["ret_coco"].metrics}
    for name, value in expected.items():
        assert result.metrics[name] == pytest.approx(value, abs=1e-6), name


def test_flickr_through_the_command_writes_each_json(tmp_path):
    (tmp_path / "flickr" / "flickr30k_images").mkdir(parents=True)
    items = _items(tmp_path / "flickr" / "flickr30k_images", 8)
    write_flickr30k(tmp_path / "flickr" / "dataset_flickr30k.json", {"train": items[:3], "test": items[3:]})
    (tmp_path / "val2017").mkdir()
    coco = _items(tmp_path / "val2017", 6)
    write_coco_captions(tmp_path / "annotations" / "captions_val2017.json", coco)
    records = run_group(tmp_path, "clip", "retrieval", {"flickr30k": "flickr/dataset_flickr30k.json",
                                                         "coco_captions": "annotations/captions_val2017.json"},
                        tmp_path)
    from helpers.evaluation import tiny

    model, tokenizer = tiny("clip")
    assert records["ret_flickr30k"]["n_samples"] == 5  # the test split only
    for task, subset in (("ret_flickr30k", items[3:]), ("ret_coco", coco)):
        expected = _brute_force(model, tokenizer, subset)
        assert records[task]["task"] == task and records[task]["experiment"] == "exp"
        for name, value in expected.items():
            assert records[task]["metrics"][name] == pytest.approx(value, abs=1e-5)


def test_nan_embeddings_are_an_error(tmp_path):
    (tmp_path / "val2017").mkdir()
    write_coco_captions(tmp_path / "annotations" / "captions_val2017.json", _items(tmp_path / "val2017", 4))
    ctx = context("meru", tmp_path, {"coco_captions": "annotations/captions_val2017.json"})
    nan_images(ctx.model)
    with pytest.raises(NonFiniteEmbeddingError, match="ret_coco image embeddings"):
        retrieval.run(ctx, "ret_coco")
