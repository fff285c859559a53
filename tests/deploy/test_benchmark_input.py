"""The input pipeline's benchmarks on the CPU: a training batch's way to the device (benchmarks/batch_transfer.py) and
the training stream's images/s at each count of loader processes (benchmarks/train_input.py)."""

import io
import json
import math
import subprocess
import sys

import pytest
from PIL import Image

from hypvl.data.formats.grounded import iter_grounded
from hypvl.data.formats.shards import shard_paths

from helpers import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
from train_input import box_crops_per_s, stand_in_shards  # noqa: E402


def _benchmark(name: str, *options: str) -> dict:
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / name), *options], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_batch_transfer_compares_the_streams_pixels_with_floats_made_in_the_workers():
    """benchmarks/batch_transfer.py on the CPU: both wire formats delivered through 2 loader processes and made the
    same unit floats (bitwise), the stream's uint8 pixels a quarter of float32's bytes."""
    result = _benchmark("batch_transfer.py", "--device", "cpu", "--batch", "4", "--image-size", "16", "--workers", "2",
                        "--batches", "3")
    assert result["uint8"]["bytes"] == 4 * 16 * 16 * 3 and result["float32"]["bytes"] == 4 * result["uint8"]["bytes"]
    for wire in ("uint8", "float32"):
        assert result[wire]["bitwise"] is True
        assert 0 < result[wire]["loader_s_per_batch"] < 10 and 0 <= result[wire]["device_s_per_batch"] < 10


def test_train_input_stand_ins_are_grounded_shards_of_photos_with_one_to_three_box_crops(tmp_path):
    shards = stand_in_shards(tmp_path, samples=12, shards=3, photo=(50, 30), distinct=4)
    assert shard_paths(tmp_path / "shards") == shards and len(shards) == 3
    records = [record for shard in shards for record in iter_grounded(shard)]
    assert len(records) == 12 and len({record.key for record in records}) == 12
    assert [len(record.boxes) for record in records] == [1 + i % 3 for i in range(12)]
    for record in records:
        assert Image.open(io.BytesIO(record.image)).size == (50, 30)
        assert {Image.open(io.BytesIO(crop)).size for crop, _ in record.boxes} == {(224, 224)}
        assert record.caption and all(text for _, text in record.boxes)


def test_train_input_rates_each_view_at_each_process_count_and_sizes_a_gpus_processes():
    """The trainer's stream through 0 and 2 loader processes for both views; the processes a GPU needs are its
    images/s over the largest count's rate per process, rounded up."""
    result = _benchmark("train_input.py", "--photo", "40x30", "--batch", "4", "--rounds", "2", "--workers", "0,2",
                        "--gpu-images-per-s", "5000,1", "--json")
    assert set(result["modes"]) == {"pairs", "compositional"} and result["photo"] == [40, 30]
    for row in result["modes"].values():
        assert set(row["images_per_s"]) == {"0", "2"} and all(rate > 0 for rate in row["images_per_s"].values())
        assert row["per_process"] == row["images_per_s"]["2"] / 2
        assert row["processes_per_gpu"] == {"5000.0": math.ceil(5000 / row["per_process"]), "1.0": 1}
    rates = [result["modes"][view]["per_process"] for view in ("pairs", "compositional")]
    assert result["box_crops_per_s"] == box_crops_per_s(*rates)


def test_a_box_crops_rate_is_the_time_it_adds_to_a_whole_images_sample():
    """Worked by hand: 400 whole images/s is 2.5 ms a sample; 500 images/s of a whole image and a box crop each is
    4 ms a sample; the box crop adds 1.5 ms, 666.7 a second. Samples no slower with their box crop: no rate."""
    assert box_crops_per_s(400, 500) == pytest.approx(1 / 0.0015)
    assert box_crops_per_s(400, 800) is None and box_crops_per_s(400, 900) is None
