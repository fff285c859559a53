"""TINY (the smallest model config) and the models and batches built from it, shared by the model, training and
evaluation tests."""

import torch

from hypvl.models.build import build_model


TINY = {"image_size": 16, "embed_dim": 8, "text": {"context_length": 12, "width": 16, "layers": 1, "heads": 2},
        "backbones": {"vit_s16": {"patch": 8, "width": 16, "depth": 1, "heads": 2}}}


def _batch(n=4, boxes=False):
    g = torch.Generator().manual_seed(0)
    batch = {"images": torch.rand(n, 3, 16, 16, generator=g),
             "tokens": torch.randint(1, 400, (n, 12), generator=g)}
    batch["tokens"][:, -1] = 49407  # EOT, the largest id, where features are taken
    if boxes:
        batch["box_images"] = torch.rand(n, 3, 16, 16, generator=g)
        batch["box_tokens"] = batch["tokens"].flip(0)
    return batch


def _model(method, **overrides):
    torch.manual_seed(0)
    return build_model(method, "vit_s16", TINY, overrides)
