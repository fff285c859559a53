"""The training input pipeline: the three views, MERU's subreddit prefix, corrupt images, caching, readers across
ranks and loader workers, and streams restarted from a saved position."""

import io
import tarfile

import pytest
import torch
from PIL import Image

from helpers.train_stream import TOKENIZER, _shards, _stream, _take
from hypvl.data.formats.grounded import GroundedRecord, write_grounded_shards
from hypvl.data.formats.images import encode_image
from hypvl.errors import InputError
from hypvl.train.data import TrainingStream
from hypvl.train.records import read_shard
from hypvl.train.subreddits import prefixed_caption, subreddit_words


def _captions(batch) -> list[int]:
    """The caption number of each row ("caption 7" -> 7), from its tokens."""
    numbers = {tuple(TOKENIZER([f"caption {i}"])[0].tolist()): i for i in range(100)}
    return [numbers[tuple(row.tolist())] for row in batch["tokens"]]


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) if torch.is_tensor(a[k]) else a[k] == b[k] for k in a)


def test_three_views(tmp_path):
    shards = _shards(tmp_path)
    [batch] = _take(_stream(shards), 1)
    assert batch["images"].shape == (4, 16, 16, 3) and batch["tokens"].shape == (4, 12)
    assert batch["images"].dtype == torch.uint8  # pixels, made unit floats where the step runs
    # each image is one colour, (20 i, 0, 0) for caption i (JPEG moves it by a level or two): the crop of its image
    red = torch.tensor([20 * n for n in _captions(batch)])
    colours = torch.stack([red, red * 0, red * 0], -1)[:, None, None]
    assert (batch["images"].int() - colours).abs().max() <= 2
    [batch] = _take(_stream(shards, "boxes_as_pairs", batch_size=24), 1)
    reader, state = batch["stream"]
    assert reader == 0 and state["read"] < 24  # box pairs fill the batch beside whole pairs
    [batch] = _take(_stream(shards, "compositional"), 1)
    assert batch["box_images"].shape == (4, 16, 16, 3) and batch["box_tokens"].shape == (4, 12)
    green = (batch["box_images"][:, 0, 0, 1].long() + 10) // 20  # box j of image i: (0, 20 i, 0), "box i j"
    assert torch.equal(batch["box_tokens"][:, 2], torch.stack([TOKENIZER([f"box {g}"])[0][2] for g in green]))
    assert batch["stream"][1]["no_box"] > 0  # samples without boxes are dropped


def test_an_epoch_visits_every_sample_once_in_a_seeded_order(tmp_path):
    shards = _shards(tmp_path)  # 12 samples in shards of 5, 5, 2
    epochs = [[n for batch in _take(_stream(shards), 6)[e * 3:(e + 1) * 3] for n in _captions(batch)] for e in (0, 1)]
    assert sorted(epochs[0]) == sorted(epochs[1]) == list(range(12))
    assert epochs[0] != epochs[1] and epochs[0] != list(range(12))  # reshuffled every epoch
    other = TrainingStream(shards, TOKENIZER, 16, 4, "pairs", seed=1, shuffle_buffer=4)
    assert [n for batch in _take(other, 3) for n in _captions(batch)] != epochs[0]


def test_corrupt_images_are_skipped_and_counted_then_fail_past_the_limit(tmp_path):
    shards = _shards(tmp_path, n=120, corrupt={7}, shard_size=40)
    state = _take(_stream(shards, max_corrupt_fraction=0.05), 40)[-1]["stream"][1]
    assert state["corrupt"] == 1 and "k0007" in state["corrupt_examples"][0] and state["read"] >= 120
    bad = _shards(tmp_path / "bad", n=120, corrupt=set(range(0, 120, 10)), shard_size=40)
    with pytest.raises(InputError, match=r"corrupt images .* > max_corrupt_fraction"):
        _take(_stream(bad, max_corrupt_fraction=0.05), 40)


@pytest.mark.parametrize("mode", ["pairs", "boxes_as_pairs", "compositional"])
def test_decoding_once_yields_the_batches_of_reading_every_pass(tmp_path, mode):
    """Epochs of a 12-sample corpus: the cached stream (decoded once) equals the re-reading one."""
    shards = _shards(tmp_path, corrupt={5})
    cached, reread = (_take(_stream(shards, mode, cache=cache), 12) for cache in (True, False))
    assert all(_same(a, b) for a, b in zip(cached, reread))
    state = cached[-1]["stream"][1]
    assert state["epoch"] >= 2 and state["corrupt"] >= 2 and all("k0005" in m for m in state["corrupt_examples"])


@pytest.mark.parametrize("mode", ["pairs", "boxes_as_pairs", "compositional"])
def test_a_stream_restarted_from_a_batchs_state_continues_bitwise(tmp_path, mode):
    shards = _shards(tmp_path, corrupt={5})
    batches = _take(_stream(shards, mode, batch_size=3), 14)
    for k in (0, 3, 8):  # mid-epoch and mid-window
        reader, state = batches[k]["stream"]
        again = _take(_stream(shards, mode, batch_size=3, states={reader: state}), 14 - k - 1)
        assert all(_same(a, b) for a, b in zip(again, batches[k + 1:]))


def _parent_in_batch(batches) -> tuple[int, int]:
    """(box items, box items in the batch of their own parent pair) of boxes-as-pairs batches of `_shards`."""
    captions = {tuple(TOKENIZER([f"caption {i}"])[0].tolist()): i for i in range(400)}
    boxes = {tuple(TOKENIZER([f"box {i} {j}"])[0].tolist()): i for i in range(400) for j in range(3)}
    total = together = 0
    for batch in batches:
        rows = [tuple(row.tolist()) for row in batch["tokens"]]
        parents = {captions[row] for row in rows if row in captions}
        total += sum(row in boxes for row in rows)
        together += sum(boxes[row] in parents for row in rows if row in boxes)
    return total, together


def test_boxes_as_pairs_are_shuffled_apart_from_their_parents(tmp_path):
    """HyCoCLIP's "additional pre-training samples": each box is an item of its own, so it meets its parent caption
    in a batch as often as independent shuffling makes it, (B - 1) / (M - 1) for M items of a window in batches of
    B, not in nearly every batch (a sample's pair and boxes one after another); every item once an epoch."""
    n, batch_size = 300, 10
    shards = _shards(tmp_path, n=n, boxes=lambda i: 1 + i % 2, shard_size=100)  # 300 pairs + 450 boxes, one window
    items = n + sum(1 + i % 2 for i in range(n))
    rates = []
    for seed in range(4):
        stream = TrainingStream(shards, TOKENIZER, 16, batch_size, "boxes_as_pairs", seed=seed, shuffle_buffer=n)
        batches = _take(stream, items // batch_size)  # the first epoch
        rows = [tuple(row.tolist()) for batch in batches for row in batch["tokens"]]
        assert len(set(rows)) == len(rows) == items  # every pair and box once
        total, together = _parent_in_batch(batches)
        rates.append(together / total)
    expected = (batch_size - 1) / (items - 1)  # 1.2%
    assert abs(sum(rates) / len(rates) - expected) < 0.01 and max(rates) < 0.05


def test_the_border_view_crops_the_square_hycoclips_shards_store(tmp_path):
    """image_view "border": the stream crops each whole image border-padded to a square and stored as JPEG, exactly
    as if the shards held that square (written losslessly here); box crops are untouched."""
    from hypvl.data.formats.images import border_stored

    wide = [Image.new("RGB", (48, 16 + i % 2), (200, 10 * i, 0)) for i in range(12)]  # 16 x 5 inside the square
    boxes = [[(encode_image(Image.new("RGB", (24, 24), (0, 20 * i, 0))), f"box {i}")] for i in range(12)]
    raw = write_grounded_shards([GroundedRecord(f"k{i:04d}", encode_image(image, "PNG"), f"caption {i}", boxes[i])
                                 for i, image in enumerate(wide)], tmp_path / "raw", shard_size=5)
    stored = write_grounded_shards([GroundedRecord(f"k{i:04d}", encode_image(border_stored(image, 16), "PNG"),
                                                   f"caption {i}", boxes[i]) for i, image in enumerate(wide)],
                                   tmp_path / "stored", shard_size=5)
    for mode in ("pairs", "compositional"):
        border = _take(_stream(raw, mode, image_view="border"), 6)
        assert all(_same(a, b) for a, b in zip(border, _take(_stream(stored, mode), 6)))
        original = _take(_stream(raw, mode), 6)
        assert not any(torch.equal(a["images"], b["images"]) for a, b in zip(border, original))
        white = [(image.int() > 235).all(-1).any().item() for batch in border for image in batch["images"]]
        assert all(white)  # a crop of at least half the square reaches its white bands
    with pytest.raises(ValueError, match="unknown image view 'padded'"):
        _stream(raw, image_view="padded")


def test_loader_workers_take_turns_and_restart_where_they_were(tmp_path):
    shards = _shards(tmp_path, n=24)  # 5 shards: readers 0 and 1 get 3 and 2
    stream = _stream(shards, workers=2)
    batches = _take(stream, 9)
    assert [batch["stream"][0] for batch in batches] == [0, 1] * 4 + [0]
    assert {n for batch in batches[0::2] for n in _captions(batch)}.isdisjoint(
        {n for batch in batches[1::2] for n in _captions(batch)})  # each reader its own shards
    states = {}
    for batch in batches[:5]:  # a run that consumed 5 batches
        states[batch["stream"][0]] = batch["stream"][1]
    again = _take(_stream(shards, workers=2, states=states, rotation=5), 4)
    assert all(_same(a, b) for a, b in zip(again, batches[5:]))


def test_ranks_read_disjoint_shares_and_need_a_shard_per_reader(tmp_path):
    shards = _shards(tmp_path, n=20)  # 4 shards
    seen = [{n for batch in _take(_stream(shards, rank=rank, world=2), 4) for n in _captions(batch)}
            for rank in (0, 1)]
    assert seen[0].isdisjoint(seen[1]) and seen[0] | seen[1] == set(range(20))
    with pytest.raises(InputError, match="4 training shards cannot feed 2 process\\(es\\) x 3 reader\\(s\\)"):
        _stream(shards, rank=0, world=2, workers=3)


def test_merus_subreddit_prefix_with_its_probability(tmp_path):
    shards = _shards(tmp_path, n=40, subreddit=lambda i: ["itookapicture", "EarthPorn"][i % 2], shard_size=10)
    plain = {i: TOKENIZER([f"caption {i}"])[0] for i in range(40)}
    words = ["i took a picture", "earth porn"]
    prefixed = {i: TOKENIZER([f"{words[i % 2]} : caption {i}"])[0] for i in range(40)}
    for probability, low, high in [(0.0, 0, 0), (1.0, 40, 40), (0.5, 10, 30)]:
        rows = [row for batch in _take(_stream(shards, batch_size=8, subreddit_prefix=probability), 5)
                for row in batch["tokens"]]
        assert all(any(torch.equal(row, t) for t in (*plain.values(), *prefixed.values())) for row in rows)
        count = sum(any(torch.equal(row, t) for t in prefixed.values()) for row in rows)
        assert low <= count <= high
    bare = _shards(tmp_path / "bare")
    with pytest.raises(InputError, match="k00.*subreddit.txt.*no subreddit.*hypvl ground"):
        _take(_stream(bare, subreddit_prefix=0.5), 1)


def test_subreddit_words_are_merus_segmentation():
    # the examples of MERU's code and of RedCaps subreddits, segmented by wordsegment as MERU does
    assert subreddit_words("itookapicture") == "i took a picture"
    assert subreddit_words("EarthPorn") == "earth porn" and subreddit_words("aww") == "aww"
    assert prefixed_caption("my cat", "itookapicture") == "i took a picture : my cat"


def test_truncated_shards_are_errors_naming_the_file(tmp_path):
    [shard] = _shards(tmp_path, n=3)
    data = shard.read_bytes()
    assert len(list(read_shard(shard))) == 3
    with tarfile.open(shard) as archive:
        boundary = archive.getmembers()[3].offset
    for cut in (len(data) // 2, boundary):  # inside a member; at a member boundary (no end-of-archive blocks)
        shard.write_bytes(data[:cut])
        with pytest.raises(InputError, match=f"{shard.name}: truncated"):
            list(read_shard(shard))
    incomplete = tmp_path / "incomplete.tar"
    with tarfile.open(incomplete, "w") as archive:
        for name, payload in [("k0.child.jpg", b"x"), ("k0.numparents.txt", b"0")]:
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            archive.addfile(info, io.BytesIO(payload))
    with pytest.raises(InputError, match="incomplete.tar: sample 'k0': missing child.txt"):
        list(read_shard(incomplete))


def test_a_decoded_twin_gives_the_same_batches_as_its_shards_in_every_mode(tmp_path):
    """Grounding's decoded twins (hypvl.data.formats.decoded) change no batch: pixels, crops, tokens, counts and
    the corrupt image's message are those of reading the tar shards, over two epochs."""
    from hypvl.data.formats.decoded import write_twin

    plain = _shards(tmp_path / "plain", corrupt={3}, subreddit=lambda i: f"sub{i}")
    twinned = _shards(tmp_path / "twinned", corrupt={3}, subreddit=lambda i: f"sub{i}")
    for shard in twinned:
        write_twin(shard)
    for mode in ("pairs", "boxes_as_pairs", "compositional"):
        expected = _take(_stream(plain, mode, subreddit_prefix=0.5), 8)
        got = _take(_stream(twinned, mode, subreddit_prefix=0.5), 8)
        for a, b in zip(expected, got):
            state_a, state_b = a.pop("stream")[1], b.pop("stream")[1]
            assert _same(a, b)
            assert [text.replace("/plain/", "/twinned/") for text in state_a["corrupt_examples"]] == state_b[
                "corrupt_examples"]
            assert {k: v for k, v in state_a.items() if k != "corrupt_examples"} == {
                k: v for k, v in state_b.items() if k != "corrupt_examples"}


def test_a_twin_is_read_only_while_its_shard_is_unchanged_and_a_broken_one_is_named(tmp_path):
    import os

    from hypvl.data.formats.decoded import read_twin, twin_paths, write_twin

    [shard] = _shards(tmp_path, n=3)
    assert read_twin(shard) is None  # none written: the shard is read
    pixels, index = write_twin(shard)
    records = read_twin(shard)
    assert [record.key for record, _ in records] == [record.key for record in read_shard(shard)]
    record, images = records[1]
    assert record.caption == "caption 1" and [p for _, p in record.boxes] == ["box 1 0"]
    from hypvl.data.formats.images import decode_image

    shard_record = list(read_shard(shard))[1]
    assert images[0].get().tobytes() == decode_image(shard_record.image, "").tobytes()
    assert images[1].get().tobytes() == decode_image(shard_record.boxes[0][0], "").tobytes()
    stat = shard.stat()
    os.utime(shard, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))  # the shard changed since: its twin is ignored
    assert read_twin(shard) is None
    write_twin(shard)
    pixels.write_bytes(pixels.read_bytes()[:-10])
    with pytest.raises(InputError, match=rf"{index.name}: unreadable decoded twin of {shard.name}"):
        read_twin(shard)
    assert twin_paths(shard) == (pixels, index)


def test_a_sample_with_several_captions_draws_one_at_every_access_seeded_and_resumable(tmp_path):
    """SLIP (datasets.py, `np.random.choice([title, desc])`), whose recipe MERU's YFCC15M rows follow, trains each
    photo with its title or its description drawn at every access: both are drawn, about equally, the same ones
    for the same seed and after a restart."""
    image = encode_image(Image.new("RGB", (24, 24), (90, 0, 0)))
    records = [GroundedRecord(f"k{i}", image, f"title {i}", captions=[f"title {i}", f"description {i}"])
               for i in range(4)]
    shards = write_grounded_shards(records, tmp_path, shard_size=2)
    texts = {tuple(TOKENIZER([f"{kind} {i}"])[0].tolist()): (kind, i) for kind in ("title", "description")
             for i in range(4)}
    batches = _take(_stream(shards), 60)  # 60 visits of each photo
    drawn = [texts[tuple(row.tolist())] for batch in batches for row in batch["tokens"]]
    assert {(kind, i) for kind, i in drawn} == set(texts.values())
    assert 0.35 < sum(kind == "title" for kind, _ in drawn) / len(drawn) < 0.65
    again = _take(_stream(shards), 60)
    assert all(_same(a, b) for a, b in zip(again, batches))
    reader, state = batches[20]["stream"]
    resumed = _take(_stream(shards, states={reader: state}), 39)
    assert all(_same(a, b) for a, b in zip(resumed, batches[21:]))
