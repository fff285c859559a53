"""Grounded shards and the training stream read from them, for the input-pipeline tests."""

from PIL import Image

from hypvl.data.formats.grounded import GroundedRecord, write_grounded_shards
from hypvl.data.formats.images import encode_image
from hypvl.errors import InputError
from hypvl.models.encoders import Tokenizer
from hypvl.train.data import TrainingStream


TOKENIZER = Tokenizer(12)


def _shards(tmp_path, n=12, corrupt=(), boxes=lambda i: i % 3, subreddit=lambda i: None, shard_size=5):
    records = []
    for i in range(n):
        image = b"\xff\xd8 broken" if i in corrupt else encode_image(Image.new("RGB", (24, 24), (i * 20, 0, 0)))
        crops = [(encode_image(Image.new("RGB", (24, 24), (0, i * 20, 0))), f"box {i} {j}") for j in range(boxes(i))]
        records.append(GroundedRecord(f"k{i:04d}", image, f"caption {i}", crops, subreddit=subreddit(i)))
    return write_grounded_shards(records, tmp_path, shard_size=shard_size)


def _stream(shards, mode="pairs", batch_size=4, **kw):
    return TrainingStream(shards, TOKENIZER, 16, batch_size, mode, seed=0, shuffle_buffer=4, **kw)


def _take(stream, count, **kw) -> list[dict]:
    batches = [batch for _, batch in zip(range(count), stream.loader(**kw))]
    for batch in batches:
        if "error" in batch:
            raise InputError(batch["error"])
    return batches
