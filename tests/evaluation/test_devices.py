"""Evaluation devices: the encoders of an `OnDevice` view run on a replica, everything else is the CPU model's.

No accelerator here, so the view is built for the CPU explicitly: the routing (which calls reach the
replica, which the model) and the end-to-end equality of a task's metrics are what can be checked.
"""

import pytest
import torch

from helpers.eval_sets import DATASETS, _coco
from helpers.evaluation import SIZE, context, tiny
from hypvl.evaluate import stats
from hypvl.runtime.devices import ENCODERS, OnDevice, device_encoder, on_device, select_device


def test_cpu_evaluation_uses_the_model_itself():
    model, _ = tiny("meru")
    assert on_device(model, torch.device("cpu")) is model
    assert select_device("cpu") == torch.device("cpu")
    assert select_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.parametrize("method", ["clip", "hycoclip"])
def test_encoders_run_on_the_replica_and_the_rest_on_the_model(method):
    model, tokenizer = tiny(method)
    view = OnDevice(model, torch.device("cpu"))
    images, tokens = torch.rand(2, 3, SIZE, SIZE), tokenizer(["a dog", "a cat"])
    with torch.no_grad():
        for name, inputs in (("image_features", images), ("trunk_features", images), ("encode_image", images),
                             ("text_features", tokens), ("encode_text", tokens)):
            assert torch.equal(getattr(view, name)(inputs), getattr(model, name)(inputs)), name
        for parameter in view.replica.parameters():
            parameter.add_(0.5)  # the replica alone changes: encoders follow it, scoring does not
        assert not torch.allclose(view.encode_image(images), model.encode_image(images))
        assert not torch.allclose(view.text_features(tokens), model.text_features(tokens))
        for name in ("encode_image", "trunk_features"):  # what the image pipeline encodes with, device to device
            (on_view, device), (on_model, cpu) = device_encoder(view, name), device_encoder(model, name)
            assert device == cpu == torch.device("cpu")
            assert torch.equal(on_view(images), getattr(view, name)(images))
            assert torch.equal(on_model(images), getattr(model, name)(images))
    assert view.similarity == model.similarity and view.embed_text == model.embed_text
    assert view.logit_scale is model.logit_scale
    assert view.replica is not model and set(ENCODERS) <= set(dir(model))


@pytest.mark.parametrize("method", ["clip", "meru"])
def test_a_task_on_the_view_matches_the_task_on_the_model(tmp_path, method):
    _coco(tmp_path)
    ctx = context(method, tmp_path, DATASETS)
    direct = stats.run(ctx, "stats_radius")
    ctx.model = OnDevice(ctx.model, torch.device("cpu"))
    assert stats.run(ctx, "stats_radius") == direct


def test_a_job_never_takes_more_threads_than_the_cores_it_may_run_on(monkeypatch):
    """A training job sized for a GPU node's cores (`--threads 8`) run on a 2-core machine takes 2 threads, not 8;
    a job asking fewer than the cores gets what it asks."""
    from hypvl.runtime.devices import use_threads

    before = torch.get_num_threads()
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1})
    try:
        assert use_threads(8) == 2 and torch.get_num_threads() == 2
        assert use_threads(1) == 1 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
