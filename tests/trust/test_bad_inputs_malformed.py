"""The bad-input corpus: every named bad input ends the real `hypvl` command (run in-process through
`hypvl.cli.main`) with a non-zero exit, exactly one line on stderr naming the file and the problem (no
traceback), and no output file.

Each case builds its input under `tmp_path` and returns (argv, the file the line must name, a regular
expression for the problem, the outputs that must not exist). The fixtures come from the format writers
(tests/helpers/format_fixtures.py) and the replication fixture (tests/data/replication).
"""

import pytest
import torch

from helpers.bad_input_builders import (
    checkpoint_case,
    compare,
    config_case,
    expected_case,
    finetune_case,
    format_case,
    image_case,
    manifest_case,
    metrics_case,
    metrics_record_case,
    probe_case,
    refused_in_one_line,
    shard_member_case,
    spec_case,
    spec_text_case,
    synthesize,
    tiny_checkpoint,
    without_recipe,
    write,
    wrong_shape,
    zero_sample_corpus,
    zero_shot_on_neither_layout,
)
from helpers.fixture_edits import edit_json, truncate

CASES = {
    # config files
    "config_empty": config_case("", "must be a mapping"),
    "config_truncated": config_case("model:\n  embed_dim: [1, 2\n", "not valid YAML"),
    "config_wrong_type": config_case("scale: 3\n", "config key scale: 3 is not"),
    "config_unknown_key": config_case("sclae: smoke\n", "'sclae' was unexpected"),
    "config_missing_file": lambda tmp_path: (synthesize(tmp_path, tmp_path / "nope.yaml")[0], tmp_path / "nope.yaml",
                                             "config file not found", []),
    "config_json_invalid": lambda tmp_path: (
        ["synthesize", "--config-json", "{not json", "--out", str(tmp_path / "out")], "--config-json",
        "not valid JSON", [tmp_path / "out"]),
    # replication specs
    "spec_empty": spec_text_case(lambda text: "", "None is not of type 'object'"),
    "spec_truncated": spec_text_case(lambda text: text[:text.index("tables:") + 20] + ": [", "tiny.yaml:"),
    "spec_duplicate_key": spec_text_case(lambda text: text.replace("      clip: tiny_clip\n",
                                                                   "      clip: tiny_clip\n      clip: tiny_meru\n"),
                                         "duplicate key 'clip'"),
    "spec_unknown_key": spec_case(lambda d: d["tables"]["table1"].update(tolerence=1), "tolerence"),
    "spec_missing_field": spec_case(lambda d: d.pop("title"), "'title' is a required property"),
    "spec_wrong_type": spec_case(lambda d: d["tables"]["table1"].update(tolerance="one"), "'one' is not of type"),
    "spec_misspelled_task": spec_case(
        lambda d: d["tables"]["table1"]["columns"]["acc_a"].update(task="zs_cifar01"),
        r"tables\.table1\.columns\.acc_a: unknown task 'zs_cifar01'"),
    "spec_misspelled_metric": spec_case(
        lambda d: d["tables"]["table1"]["columns"]["acc_a"].update(metric="top_1"),
        r"tables\.table1\.columns\.acc_a: unknown metric of task 'zs_cifar10' 'top_1'"),
    "spec_reading_unknown": spec_case(lambda d: d["tables"]["table1"]["columns"].update(avg={
        "reading": "caption", "readings": {"captoin": {"task": "zs_cifar10", "metric": "top1"},
                                           "text": {"task": "zs_cifar100", "metric": "top1"}}}),
        r"columns\.avg\.reading: unknown reading 'caption' \(did you mean 'captoin'"),
    "spec_mean_without_metric": spec_case(lambda d: d["tables"]["table1"]["columns"]["avg"].pop("metric"),
                                          r"columns\.avg: mean_of item 'zs_cifar10' names no metric"),
    "compare_blockers_unknown_reason": lambda tmp_path: (
        [*compare(tmp_path)[0], "--blockers", '{"experiments": {"tiny_clip": "not bulit"}}'], "--blockers",
        "experiments must map ids to reasons", compare(tmp_path)[1]),
    "spec_expected_escapes": spec_case(lambda d: d["tables"]["table1"].update(expected="../../x.csv"),
                                       r"tables\.table1\.expected"),
    # expected CSVs
    "expected_empty": expected_case(lambda text: "", "table1.csv"),
    "expected_truncated": expected_case(lambda text: text[:text.rindex("\n", 0, -1) + 12], "table1.csv"),
    "expected_duplicate_row": expected_case(lambda text: text + text.splitlines()[1] + "\n", "clip"),
    "expected_missing_column": expected_case(lambda text: text.replace(",0.79,dnc", ",0.79"), "table1.csv"),
    "expected_wrong_type": expected_case(lambda text: text.replace("30.5", "thirty"), "thirty"),
    # metric JSONs
    "metrics_empty": metrics_case(lambda text: "", "not valid JSON"),
    "metrics_truncated": metrics_case(lambda text: text[: len(text) // 2], "not valid JSON"),
    "metrics_not_an_object": metrics_case(lambda text: "[1, 2]", "expected a JSON object"),
    "metrics_nan": metrics_case(lambda text: text.replace("51.0", "NaN"), "'top1' is nan, not a finite number"),
    "metrics_negative": metrics_record_case(lambda r: r["metrics"].update(top1=-5), r"outside \[0, 100\]"),
    "metrics_over_100": metrics_record_case(lambda r: r["metrics"].update(top1=2100), r"outside \[0, 100\]"),
    "metrics_wrong_type": metrics_record_case(lambda r: r["metrics"].update(top1="51"), "not a finite number"),
    "metrics_missing_provenance": metrics_record_case(lambda r: r.pop("provenance"), "provenance"),
    "metrics_wrong_experiment": metrics_record_case(lambda r: r.update(experiment="other"), "experiment is 'other'"),
    "metrics_other_run_config": metrics_record_case(
        lambda r: r["provenance"].update(run_config={"train": {"steps": 400}}, run_config_hash="a" * 12),
        "measured under another config than"),
    "compare_seeds_not_json": lambda tmp_path: (
        [*compare(tmp_path)[0], "--seeds", "{tiny_clip: [0"], "--seeds", "not valid JSON", compare(tmp_path)[1]),
    "compare_seeds_not_a_row": lambda tmp_path: (
        [*compare(tmp_path)[0], "--seeds", '{"tiny_nope": [0, 1]}'], tmp_path / "replication" / "tiny.yaml",
        "'tiny_nope' is not the experiment of a row", compare(tmp_path)[1]),
    # data formats
    "coco_captions_truncated": format_case("coco_captions", truncate, "truncated JSON"),
    "coco_captions_duplicate_id": format_case(
        "coco_captions", lambda p: edit_json(p, lambda d: d["images"].append(dict(d["images"][0]))), "duplicate"),
    "coco_captions_path_escapes": format_case(
        "coco_captions", lambda p: edit_json(p, lambda d: d["images"][0].update(file_name="../../../etc/passwd")),
        "points outside the image root"),
    "coco_instances_missing_field": format_case(
        "coco_instances", lambda p: edit_json(p, lambda d: d["images"][0].pop("width")), "width"),
    "flickr30k_wrong_type": format_case(
        "flickr30k", lambda p: edit_json(p, lambda d: d["images"][0].update(sentences=5)), "sentences"),
    "vg_attribution_path_escapes": format_case(
        "vg_attribution", lambda p: edit_json(p, lambda d: d[0].update(image_path="/etc/passwd")),
        "points outside the image root"),
    "hyperlex_truncated": format_case("hyperlex", lambda p: truncate(p, 0.85), "truncated line"),
    "hierarcaps_test_empty": format_case("hierarcaps_test", lambda p: p.write_text(""), "hierarcaps_test.csv"),
    "breeds_split_missing_field": format_case("breeds_split", lambda p: edit_json(p, lambda d: d.pop("label_map")),
                                              "missing field 'label_map'"),
    "wordnet_isa_wrong_type": format_case("wordnet_isa", lambda p: p.write_text("n00001740 dog\n"),
                                          "'dog' is not a wnid"),
    # images
    "image_truncated_jpeg": image_case,
    # shards
    "redcaps_shard_truncated": format_case("redcaps", lambda p: truncate(p, 0.5), "truncated"),
    "redcaps_shard_corrupt_jpeg": shard_member_case("redcaps", lambda m: m.update(jpg=m["jpg"][:40]),
                                                    "image does not decode"),
    "grit_shard_missing_json": shard_member_case("grit", lambda m: m.pop("json"), "missing member '.json'"),
    "cc3m_shard_empty_caption_file": format_case("cc3m", lambda p: p.write_bytes(b""), "00000.tar"),
    "clip_benchmark_unannounced_shard": format_case(
        "clip_benchmark_wds", lambda p: write(p / "test" / "nshards.txt", "2\n"),
        r"announces 2 shards but the folder also holds \['2.tar'\]"),
    "grounded_shard_corrupt_child": shard_member_case(
        "grounded", lambda m: m.update({"child.jpg": b"\xff\xd8 not a jpeg"}), "image does not decode"),
    "train_zero_samples": zero_sample_corpus,
    # checkpoints
    "checkpoint_empty": checkpoint_case(lambda p: p.write_bytes(b""), "empty file"),
    "checkpoint_text": checkpoint_case(lambda p: p.write_text("weights go here\n"), "not a PyTorch checkpoint"),
    "checkpoint_truncated": checkpoint_case(lambda p: (tiny_checkpoint(p), truncate(p, 0.5)),
                                            "not a readable checkpoint"),
    "checkpoint_not_a_dict": checkpoint_case(lambda p: torch.save([1, 2], p), "a checkpoint is a dict"),
    "checkpoint_missing_recipe": checkpoint_case(without_recipe, "no 'recipe' entry"),
    "checkpoint_wrong_shape": checkpoint_case(wrong_shape, r"has shape \(3, 3\), the model expects"),
    "checkpoint_missing": checkpoint_case(lambda p: None, "checkpoint not found"),
    # evaluation data
    "zeroshot_split_in_neither_layout": zero_shot_on_neither_layout,
    # HierarCaps RE fine-tuning
    "finetune_malformed_train_row": finetune_case({}, "an animal => a dog => a small dog,a vehicle => a cat\n",
                                                  r"line 3: 'positive' should be 4 non-empty levels"),
    "finetune_unknown_override": finetune_case({"rooot": "fixed_mean"}, "",
                                               r"experiment 'tiny_ft': method 'radial_ft' does not support the "
                                               r"overrides \['rooot'\]", named="spec"),
    "finetune_bad_override_value": finetune_case({"objective": "clip_loss"}, "",
                                                 r"override objective must be one of", named="spec"),
    # acquisition manifests
    "manifest_path_escapes": manifest_case({"files": [{"url": "https://x.invalid/a", "path": "../a",
                                                       "sha256": None}]}, "inside the destination folder"),
    "manifest_unpack_to_escapes": manifest_case(
        {"files": [{"url": "https://x.invalid/a", "path": "a.tar", "sha256": None, "unpack": True,
                    "unpack_to": "/tmp"}]}, "inside the destination folder"),
    "manifest_unreachable_url": lambda tmp_path: (
        manifest_case({"files": [{"url": "https://unreachable.invalid/a.tar", "path": "a.tar", "sha256": None}]},
                      "")(tmp_path)[0], "https://unreachable.invalid/a.tar", "download failed",
        [tmp_path / "dest" / "a.tar"]),
    "manifest_missing_field": manifest_case({"files": [{"url": "https://x.invalid/a"}]}, "needs url, path and sha256"),
    "manifest_plain_http": manifest_case({"files": [{"url": "http://x.invalid/a", "path": "a", "sha256": None}]},
                                         "is not an https URL"),
    "manifest_digest_without_source": manifest_case(
        {"files": [{"url": "https://x.invalid/a", "path": "a", "sha256": "ab" * 32}]}, "without its checksum_source"),
    # linear-probe sources
    "probe_source_split_missing": probe_case("sst2", {"train": ["negative", "positive"]}, "split folder not found",
                                             lambda source: source / "val"),
    "probe_split_missing_a_class": probe_case("sst2", {"train": ["negative"], "val": ["negative", "positive"]},
                                              r"holds no image of class\(es\) \[1\]", lambda source: source / "train"),
    "probe_slice_of_an_unordered_folder": probe_case("cifar10", {"train": ["a", "b"]}, "keeps no record order",
                                                     lambda source: source / "train"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_refused_in_one_line(name, tmp_path, capsys, monkeypatch):
    refused_in_one_line(CASES[name], tmp_path, capsys, monkeypatch)


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 40
