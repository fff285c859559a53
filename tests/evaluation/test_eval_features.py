"""The shared feature extraction of the evaluation tasks: prefetched batches are the embeddings of images encoded one
by one, and loader processes give bitwise the features of loader threads. (The evaluation tests' shared pieces:
tests/helpers/evaluation.py.)"""

import os

import pytest
import torch

from helpers.evaluation import SIZE, embed_one_by_one, nan_images, random_image, tiny
from helpers.models import TINY
from hypvl.data.formats.imagefolder import load_image
from hypvl.data.transforms import resize_center_crop, squeeze, to_tensor_batch
from hypvl.errors import InputError
from hypvl.evaluate.features import image_embeddings, set_loader_workers, trunk_features
from hypvl.evaluate.metrics.checks import NonFiniteEmbeddingError


def test_prefetched_batches_equal_one_by_one_encoding(tmp_path):
    g = torch.Generator().manual_seed(0)
    paths = []
    for i in range(7):
        paths.append(tmp_path / f"{i}.png")
        random_image(g, 20 + i, 18).save(paths[-1])
    model, _ = tiny("meru")
    batched = image_embeddings(model, lambda i: load_image(paths[i]), 7, lambda im: squeeze(im, SIZE), 3, "x")
    oracle = embed_one_by_one(model, [load_image(p) for p in paths], lambda im: squeeze(im, SIZE))
    assert torch.allclose(batched, oracle, atol=1e-5)
    trunk = trunk_features(model, lambda i: load_image(paths[i]), 7, lambda im: resize_center_crop(im, SIZE), 2, "x")
    with torch.no_grad():
        pixels = to_tensor_batch([resize_center_crop(load_image(p), SIZE) for p in paths])
        expected = model.visual((pixels - torch.tensor([0.485, 0.456, 0.406])[:, None, None])
                                / torch.tensor([0.229, 0.224, 0.225])[:, None, None])
    assert trunk.shape == (7, TINY["backbones"]["vit_s16"]["width"])
    assert torch.allclose(trunk, expected, atol=1e-5)
    nan_images(model)
    with pytest.raises(NonFiniteEmbeddingError, match="x image embeddings"):
        image_embeddings(model, lambda i: load_image(paths[i]), 7, lambda im: squeeze(im, SIZE), 3, "x")


def test_loader_processes_give_bitwise_the_features_of_loader_threads(tmp_path):
    """`eval.num_workers`: images decoded and cropped in DataLoader processes, the same batches, the same bits; a
    bad image is the same one-line error."""
    g = torch.Generator().manual_seed(3)
    paths = [tmp_path / f"{i}.jpg" for i in range(7)]
    for i, path in enumerate(paths):
        random_image(g, 30 + 3 * i, 22).save(path, quality=90)
    model, _ = tiny("meru")
    pids = tmp_path / "pids"

    def load(i):
        with pids.open("a") as handle:
            handle.write(f"{os.getpid()}\n")
        return load_image(paths[i])

    def embed():
        return image_embeddings(model, load, 7, lambda im: resize_center_crop(im, SIZE), 3, "x")

    threads = embed()
    assert set(pids.read_text().split()) == {str(os.getpid())}
    pids.unlink()
    set_loader_workers(2)
    try:
        processes = embed()
        paths[4].write_bytes(b"not a JPEG")
        with pytest.raises(InputError, match=rf"^{paths[4]}: image does not decode"):
            embed()
    finally:
        set_loader_workers(0)
    assert torch.equal(processes, threads)
    assert str(os.getpid()) not in pids.read_text().split()  # decoded in the loader processes only
