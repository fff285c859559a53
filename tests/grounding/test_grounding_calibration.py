"""The box threshold calibrated to HyCoCLIP's kept share (issue 42): the counts `BoxFilter` keeps at every threshold,
worked by hand; the threshold chosen and its ties; `hypvl calibrate` on the smoke RedCaps with the oracle and the
stand-in detector; `hypvl ground` reading the calibration (`box_threshold: calibrated`), recording it, and refusing a
missing or mismatched one in one line."""

import argparse
import json
import random

import pytest

from helpers.grounding import SMOKE, _killed_after, write_raw_corpora
from hypvl.config import load_config
from hypvl.errors import InputError
from hypvl.grounding import calibration, commands, resume
from hypvl.grounding.calibration import KeptCurve, calibrate, choose, inside
from hypvl.grounding.detector import PhraseGroundingDetector, random_owlv2_detector
from hypvl.grounding.filters import BoxFilter
from hypvl.grounding.threshold import box_threshold


def _box(phrase, score, side=20):
    return {"phrase": phrase, "box": [0.0, 0.0, float(side), float(side)], "score": score}


# four samples: two phrases; one phrase and a box too small for min_side 4 (area 4 <= 16); one phrase boxed twice
# (the first confident box is kept, so the pair keeps one box up to 0.8); none
HAND = [[_box("dog", 0.9), _box("cat", 0.5)],
        [_box("car", 0.7), _box("bike", 0.95, side=2)],
        [_box("tree", 0.3), _box("tree", 0.8)],
        []]


def test_the_counts_at_every_threshold_are_the_box_filters_worked_by_hand():
    curve = KeptCurve(HAND, min_side=4)
    by_hand = {0.0: (3, 4), 0.3: (3, 4), 0.5: (3, 4), 0.51: (3, 3), 0.7: (3, 3), 0.75: (2, 2), 0.8: (2, 2),
               0.85: (1, 1), 0.9: (1, 1), 0.91: (0, 0), 0.95: (0, 0), 1.0: (0, 0)}
    for threshold, (pairs, boxes) in by_hand.items():
        kept = curve.at(threshold)
        assert (kept.pairs, kept.boxes, kept.samples) == (pairs, boxes, 4), threshold
        direct = [BoxFilter(4, threshold).apply(candidates, {}) for candidates in HAND]
        assert (sum(map(bool, direct)), sum(map(len, direct))) == (pairs, boxes)
    assert [(low, high, kept.pairs, kept.boxes) for low, high, kept in curve.ranges()] == [
        (0.0, 0.5, 3, 4), (0.5, 0.7, 3, 3), (0.7, 0.8, 2, 2), (0.8, 0.9, 1, 1), (0.9, 1.0, 0, 0)]


def test_the_counts_match_the_box_filter_on_random_candidates():
    rng = random.Random(0)
    samples = [[_box(rng.choice("abcd"), round(rng.random(), 2), side=rng.choice((1, 3, 10))) for _ in range(n)]
               for n in (rng.randrange(6) for _ in range(200))]
    curve = KeptCurve(samples, min_side=2)
    for threshold in [*curve.scores, *(t / 100 + 0.005 for t in range(100))]:
        direct = [BoxFilter(2, threshold).apply(candidates, {}) for candidates in samples]
        kept = curve.at(threshold)
        assert (kept.pairs, kept.boxes) == (sum(map(bool, direct)), sum(map(len, direct))), threshold


@pytest.mark.parametrize("share, per_pair, threshold, pairs", [
    (0.5, 1.086, 0.75, 2),    # 2 of 4 pairs: thresholds in (0.7, 0.8]
    (0.625, 1.086, 0.75, 2),  # 3 and 2 pairs equally near; 3 pairs with 3 boxes and 2 with 2 equally near 1.086: higher
    (0.625, 1.3, 0.2, 3),     # ...but 3 pairs with 4 boxes nearest 1.3 boxes a pair
    (0.8, 1.086, 0.6, 3),     # 3 pairs, with 3 boxes (nearer 1.086 than 4): thresholds in (0.5, 0.7]
    (0.1, 1.086, 0.95, 0),    # nothing kept: thresholds above every score
])
def test_the_threshold_chosen_keeps_the_share_nearest_the_target(share, per_pair, threshold, pairs):
    kept, _, _ = choose(KeptCurve(HAND, min_side=4), share, per_pair)
    assert (kept.threshold, kept.pairs) == (threshold, pairs)


def test_the_threshold_is_the_shortest_number_inside_its_range():
    assert [inside(0.7, 0.8), inside(0.0, 0.5), inside(0.7044, 0.7045), inside(0.9, 1.0)] == [0.75, 0.2, 0.70445, 0.95]


def test_the_calibration_records_the_counts_nearby_and_the_papers_threshold():
    result = calibrate(HAND, 4, 0.5, 1.086)
    assert (result["box_threshold"], result["range"], result["samples"], result["candidates"]) == (0.75, [0.7, 0.8],
                                                                                                    4, 6)
    assert result["kept"] == {"threshold": 0.75, "pairs": 2, "pair_share": 0.5, "boxes": 2, "boxes_per_kept_pair": 1.0}
    assert [row["threshold"] for row in result["nearby"]] == [0.65, 0.7, 0.73, 0.74, 0.75, 0.76, 0.77, 0.8, 0.85]
    assert [row["pairs"] for row in result["nearby"]] == [3, 3, 2, 2, 2, 2, 2, 2, 1]


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    return write_raw_corpora(tmp_path_factory.mktemp("raw"))


def _run(raw, tmp_path, folder, *argv, **grounding):
    """`hypvl <argv>` on the smoke RedCaps grounded into `folder`, with config grounding's `grounding` settings."""
    config = tmp_path / f"{folder}.json"
    config.write_text(json.dumps({"data_dir": str(raw), "corpora": {"redcaps": folder}, "grounding": {
        "raw": {"redcaps": {"format": "redcaps", "path": "redcaps"}}, **grounding}}))
    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers(dest="command")
    commands.add_commands(subparsers)
    calibration.add_commands(subparsers)
    args = parser.parse_args([*argv, "--configfile", str(config)])
    return lambda: args.func(args)


def _summary(raw, folder):
    return json.loads((raw / folder / commands.SUMMARY).read_text())


def test_calibrate_prints_and_writes_a_threshold_that_grounding_keeps_its_share_at(raw, tmp_path, capsys):
    """On every sample of the smoke RedCaps, grounding at the threshold found keeps exactly the pairs and boxes the
    calibration counted; grounding.json says where the threshold came from."""
    _run(raw, tmp_path, "oracle", "calibrate", "--samples", str(SMOKE.redcaps_samples))()
    found = json.loads((raw / "oracle.calibration.json").read_text())
    kept, printed = found["kept"], capsys.readouterr().out
    assert found["corpus"] == "redcaps" and found["samples"] == SMOKE.redcaps_samples
    assert found["made_with"]["detector"] == "oracle" and found["made_with"]["min_box_side"] == 9
    assert printed.startswith(f"redcaps: {SMOKE.redcaps_samples} raw samples, {found['candidates']} candidate boxes "
                              f"(oracle); box threshold {found['box_threshold']:.6g} keeps {kept['pairs']} pairs "
                              f"({kept['pair_share']:.1%}, target 50.9%) with {kept['boxes']} boxes")
    assert "<- chosen" in printed and "HyCoCLIP's (GLIP's scale)" in printed and len(found["nearby"]) >= 5
    assert abs(kept["pair_share"] - 0.5088) <= 1 / SMOKE.redcaps_samples
    _run(raw, tmp_path, "oracle", "ground", "--corpus", "redcaps", box_threshold="calibrated")()
    summary = _summary(raw, "oracle")
    counts = summary["counts"]
    assert summary["filters"]["box_threshold"] == found["box_threshold"]
    assert (counts["samples_in"], counts["samples_grounded"], counts["boxes_kept"]) == (
        SMOKE.redcaps_samples, kept["pairs"], kept["boxes"])
    assert summary["box_threshold_from"] == {
        "from": "calibration", "file": "oracle.calibration.json", "corpus": "redcaps",
        "samples": SMOKE.redcaps_samples, "pair_share": kept["pair_share"],
        "boxes_per_kept_pair": kept["boxes_per_kept_pair"], "target_pair_share": 0.5088}
    _run(raw, tmp_path, "oracle", "ground", "--corpus", "redcaps")()
    assert _summary(raw, "oracle")["box_threshold_from"] == {"from": "config"}


def test_the_threshold_used_is_in_the_resume_recipe(raw, tmp_path, monkeypatch):
    _run(raw, tmp_path, "cut", "calibrate", "--samples", "12")()
    threshold = json.loads((raw / "cut.calibration.json").read_text())["box_threshold"]
    _killed_after(1, monkeypatch, _run(raw, tmp_path, "cut", "ground", "--corpus", "redcaps", "--shard-size", "5",
                                       box_threshold="calibrated"))
    assert json.loads((raw / ".cut.partial" / resume.PROGRESS).read_text())["recipe"]["box_threshold"] == threshold


def test_calibrate_with_the_stand_in_detector_and_a_mismatch_refused(raw, tmp_path, monkeypatch, capsys):
    def from_pretrained(model_id, device, revision=None, hub_cache=None, precision="fp32"):
        return random_owlv2_detector(seed=0, image_size=64, precision=precision)

    monkeypatch.setattr(PhraseGroundingDetector, "from_pretrained", from_pretrained)
    detector = {"detector": "stand/in", "min_box_side": 4}
    _run(raw, tmp_path, "owl", "calibrate", **detector)()
    found = json.loads((raw / "owl.calibration.json").read_text())
    assert found["made_with"]["detector"] == "stand/in" and found["made_with"]["detector_precision"] == "fp32"
    assert f"(stand/in); box threshold {found['box_threshold']:.6g} keeps {found['kept']['pairs']} pairs" in \
        capsys.readouterr().out
    assert 0 < found["kept"]["pairs"] < SMOKE.redcaps_samples and found["candidates"] > SMOKE.redcaps_samples
    _run(raw, tmp_path, "owl", "ground", "--corpus", "redcaps", box_threshold="calibrated", **detector)()
    counts = _summary(raw, "owl")["counts"]
    assert (counts["samples_grounded"], counts["boxes_kept"]) == (found["kept"]["pairs"], found["kept"]["boxes"])
    with pytest.raises(InputError, match=r"owl\.calibration\.json: made with detector_precision 'fp32', this "
                                         r"grounding's is 'bf16'; run `hypvl calibrate --corpus redcaps` again$"):
        _run(raw, tmp_path, "owl", "ground", "--corpus", "redcaps", box_threshold="calibrated", precision="bf16",
             **detector)()


def test_calibrated_without_a_calibration_or_with_another_min_box_side_stops_in_one_line(raw, tmp_path):
    with pytest.raises(InputError) as missing:
        _run(raw, tmp_path, "none", "ground", "--corpus", "redcaps", box_threshold="calibrated")()
    assert str(missing.value) == (f"{raw / 'none.calibration.json'}: no calibration for grounding.box_threshold: "
                                  "calibrated; run `hypvl calibrate --corpus redcaps` first")
    assert not (raw / "none").exists()
    _run(raw, tmp_path, "other", "calibrate", "--samples", "8")()
    with pytest.raises(InputError, match=r"other\.calibration\.json: made with min_box_side 9, this grounding's is 4; "):
        _run(raw, tmp_path, "other", "ground", "--corpus", "redcaps", box_threshold="calibrated", min_box_side=4)()


def test_grit_and_a_corpus_without_boxes_read_no_calibration():
    """GRIT's spans are kept whatever their score, under a number as under `calibrated` (prepare_GRIT_webdataset.py
    applies no threshold)."""
    spans = (0.0, {"from": "none: GRIT keeps its spans whatever their score (prepare_GRIT_webdataset.py)"})
    for threshold in ("calibrated", 0.65):
        config = load_config(config_json=[json.dumps({"grounding": {"box_threshold": threshold}})])
        assert box_threshold(config, "grit", None) == spans
    assert box_threshold(config, "redcaps", None) == (0.65, {"from": "config"})
    config = load_config(config_json=[json.dumps({"grounding": {"box_threshold": "calibrated"}})])
    assert box_threshold(config, "yfcc15m", None, boxes=False) == (None, {"from": "none: grounded without boxes"})


@pytest.mark.parametrize("grounding, key", [({"box_threshold": "calibrate"}, "grounding.box_threshold"),
                                            ({"calibration": {"target_pair_share": 5.8}},
                                             "grounding.calibration.target_pair_share")])
def test_a_typo_in_the_threshold_settings_is_one_line(grounding, key):
    with pytest.raises(InputError, match=rf"^default\.yaml \+ --config-json: config key {key}: [^\n]+$"):
        load_config(config_json=[json.dumps({"grounding": grounding})])


def test_paper_scale_calibrates_before_grounding_the_corpora_the_detector_grounds(tmp_path):
    """full.yaml: `calibrated`; the calibration job (the detector on a GPU) waits for RedCaps' acquisition, and the
    RedCaps and CC3M groundings wait for it; GRIT (its own spans) and YFCC15M (no boxes) read none."""
    from helpers.cluster import FULL, dry_run, job_of, jobs

    from hypvl.workflow import Plan

    plan = Plan(load_config([FULL]))
    calibration_file = str(plan.data.root / "train" / "redcaps_grounded.calibration.json")
    assert plan.config["grounding"]["box_threshold"] == "calibrated"
    assert {corpus: plan.data.calibration(corpus) for corpus in plan.config["grounding"]["raw"]} == {
        "grit": [], "redcaps": [calibration_file], "cc3m": [calibration_file], "yfcc15m": []}
    planned = jobs(dry_run(tmp_path, "{tmp}/data/train/cc3m_grounded/grounding.json"))
    [calibrate_job] = [job for job in planned if job["rule"] == "calibrate_threshold"]
    assert calibrate_job["input"] == f"{tmp_path}/data/acquired/redcaps.json"
    assert calibrate_job["resources"]["gpu"] == "1"
    assert calibrate_job["shell"].startswith("python -m hypvl.runtime.gpu_claim 1 -- hypvl calibrate --corpus redcaps ")
    ground = job_of(planned, "ground", "grounded=train/cc3m_grounded")
    assert f"{tmp_path}/data/train/redcaps_grounded.calibration.json" in ground["input"]
