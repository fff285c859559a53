"""CLIP_benchmark's JSONs (hypvl.replication.exports): the model named as its `--model`, `--pretrained` and
`--model_type` would name it, whoever measured it; the prompt set recorded; MERU's linear probe never under
CLIP_benchmark's lp_* names; and a folder of them merges as `clip_benchmark build` merges (its rows: the metrics
and every other key, model_fullname = model + " " + pretrained)."""

import csv
import io

import pytest

from hypvl.replication.exports import clip_benchmark_model, clip_benchmark_result


def record(task: str, metrics: dict, model: dict, **provenance) -> dict:
    return {"experiment": model.get("experiment", "extra_x"), "task": task, "scale": "smoke", "metrics": metrics,
            "provenance": {"model": model, **provenance}}


@pytest.mark.parametrize("identity, named", [
    ({"experiment": "hyco_hycoclip_vits_grit", "method": "hycoclip", "backbone": "vit_s16", "data": "grit"},
     ("hycoclip_vit_s16", "hyco_hycoclip_vits_grit", "hypvl")),
    ({"experiment": "hyco_released_meru_vits", "method": "meru", "backbone": "vit_s16",
      "source": "released:hycoclip/meru_vit_s"}, ("meru_vit_s16", "released:hycoclip/meru_vit_s", "hypvl")),
    ({"experiment": "extra_mine", "method": "clip", "backbone": "vit_s16", "source": "hypvl:/w/mine.pt"},
     ("clip_vit_s16", "/w/mine.pt", "hypvl")),
    ({"experiment": "extra_oc", "library": "open_clip", "source": "open_clip:ViT-B-32/laion2b_s34b_b79k"},
     ("ViT-B-32", "laion2b_s34b_b79k", "open_clip")),
    ({"experiment": "extra_oc", "library": "open_clip", "source": "open_clip:/w/oc_folder"},
     ("local-dir:/w/oc_folder", "", "open_clip")),
    ({"experiment": "extra_hf", "library": "transformers", "source": "transformers:openai/clip-vit-base-patch32"},
     ("openai/clip-vit-base-patch32", "", "transformers")),
])
def test_the_model_is_named_as_clip_benchmarks_options_name_it(identity, named):
    assert tuple(clip_benchmark_model(identity).values()) == named


def test_zero_shot_records_its_prompts_and_the_probe_its_protocol_under_names_of_its_own():
    model = {"experiment": "e", "method": "meru", "backbone": "vit_s16"}
    measured = {"top1": 50.0, "top5": 90.0, "mean_per_class_accuracy": 40.0}
    zero_shot = clip_benchmark_result(record("zs_cifar10", measured, model, prompts="clip"))
    assert zero_shot["metrics"] == {"acc1": 0.5, "acc5": 0.9, "mean_per_class_recall": 0.4}
    assert zero_shot["prompts"] == "clip"
    # fewer than five classes: acc5 as CLIP_benchmark leaves it, undefined (its NaN, JSON's null)
    two_way = clip_benchmark_result(record("zs_pcam", {"top1": 50.0, "mean_per_class_accuracy": 50.0}, model))
    assert two_way["metrics"] == {"acc1": 0.5, "acc5": None, "mean_per_class_recall": 0.5}
    older = clip_benchmark_result(record("zs_cifar10", {"top1": 50.0}, model))  # measured before prompts were recorded
    assert older["prompts"].startswith("unrecorded")
    probe = clip_benchmark_result(record("linprobe_pets", {"accuracy": 25.0, "val_accuracy": 30.0, "best_c": 1.0},
                                         model))
    assert probe["task"] == "linear_probe" and probe["metrics"] == {"logreg_mean_per_class_recall": 0.25}
    assert not any(name.startswith("lp_") for name in probe["metrics"]) and "logistic regression" in probe["protocol"]
    assert clip_benchmark_result(record("hierarcaps", {"kendall_tau": 0.1}, model)) is None


def test_the_jsons_merge_as_clip_benchmark_build_merges_them():
    """`clip_benchmark build`'s merge, as its cli.py's main_build does it: a row per JSON, its metrics and then its
    other keys (metrics dropped), and model_fullname; one CSV whose columns are every key seen."""
    results = [clip_benchmark_result(record(task, metrics, {"experiment": "extra_oc", "library": "open_clip",
                                                            "source": "open_clip:ViT-B-32/openai"}, prompts="meru"))
               for task, metrics in (("zs_cifar10", {"top1": 91.0, "mean_per_class_accuracy": 90.5}),
                                     ("ret_coco", {"t2i_r1": 30.0, "i2t_r5": 70.0}))]
    rows = []
    for result in results:
        row = {**result["metrics"], **result}
        del row["metrics"]
        rows.append({**row, "model_fullname": f"{row['model']} {row['pretrained']}"})
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=sorted({key for row in rows for key in row}))
    writer.writeheader()
    writer.writerows(rows)
    merged = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert [row["model_fullname"] for row in merged] == ["ViT-B-32 openai"] * 2
    assert float(merged[0]["acc1"]) == 0.91 and float(merged[1]["image_retrieval_recall@1"]) == 0.30
    assert merged[0]["prompts"] == "meru" and merged[1]["prompts"] == ""  # retrieval has no prompt set
    assert {row["hypvl_experiment"] for row in merged} == {"extra_oc"}


def test_export_what_exists_from_any_folder_hypvl_evaluate_wrote(tmp_path, capsys):
    """`hypvl export <folder>`: every metric JSON beneath it, each of the experiment it records whatever the folder
    is called (here `hypvl evaluate --out-dir mine` of a model named `extra_model`); a path that is not there is one
    line naming it."""
    import json

    from hypvl.cli import main
    from hypvl.evaluate.results import write_metrics

    identity = {"model": {"experiment": "extra_model", "library": "open_clip", "source": "open_clip:ViT-B-32/openai"},
                "prompts": "clip"}
    write_metrics(tmp_path / "mine" / "zs_cifar10.json", "extra_model", "zs_cifar10", "smoke",
                  {"top1": 91.0, "mean_per_class_accuracy": 90.5}, 200, "abc", 1.0, identity)
    write_metrics(tmp_path / "mine" / "ret_coco.json", "extra_model", "ret_coco", "smoke",
                  {f"{d}_r{k}": 10.0 * k for d in ("t2i", "i2t") for k in (1, 5, 10)}, 100, "abc", 1.0, identity)
    out = tmp_path / "out"
    argv = ["export", str(tmp_path / "mine"), "--scale", "smoke", "--csv", str(out / "metrics.csv"),
            "--clip-benchmark-dir", str(out / "clip_benchmark")]
    assert main(argv) == 0
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    assert {(row["model"], row["task"]) for row in rows} == {("extra_model", "zs_cifar10"), ("extra_model", "ret_coco")}
    assert len(rows) == 2 + 6
    cifar = json.loads((out / "clip_benchmark" / "cifar10_extra_model_zeroshot_classification.json").read_text())
    assert (cifar["model"], cifar["pretrained"], cifar["prompts"]) == ("ViT-B-32", "openai", "clip")
    assert cifar["metrics"] == {"acc1": 0.91, "acc5": None, "mean_per_class_recall": 0.905}
    assert main([*argv[:1], str(tmp_path / "nowhere"), *argv[2:]]) != 0
    assert f"{tmp_path / 'nowhere'}: no such metric JSON or folder" in capsys.readouterr().err
