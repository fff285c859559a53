"""The training tests' config (TRAIN_CFG) and grounded shards written for a training run."""

from PIL import Image

from hypvl.data.formats.grounded import GroundedRecord, write_grounded_shards
from hypvl.data.formats.images import encode_image


TRAIN_CFG = {"steps": 3, "batch_size_scale": 4 / 768, "paper_steps": 500000, "paper_batch_size": 768,
             "paper_warmup": 4000, "lr": 5e-4, "weight_decay": 0.2, "betas": [0.9, 0.98], "shuffle_buffer": 8,
             "max_corrupt_fraction": 0.01, "cache_decoded": True, "num_workers": 0, "checkpoint_every": 0,
             "activation_checkpointing": [], "device": "cpu", "precision": "fp32",
             "compile": False, "attention": "auto", "accum_steps": 1, "ddp_fp16_compression": False,
             "telemetry": {"log_every": 0, "tensorboard": False, "wandb": None}}


def _shards(tmp_path, n=12, corrupt=(), boxes=lambda i: i % 3):
    records = []
    for i in range(n):
        image = b"\xff\xd8 broken" if i in corrupt else encode_image(Image.new("RGB", (24, 24), (i * 20, 0, 0)))
        crops = [(encode_image(Image.new("RGB", (24, 24), (0, i * 20, 0))), f"box {i} {j}") for j in range(boxes(i))]
        records.append(GroundedRecord(f"k{i:04d}", image, f"caption {i}", crops))
    return write_grounded_shards(records, tmp_path, shard_size=5)
