"""The box threshold a grounding applies, and how it was chosen (config `grounding.box_threshold`: a number, or
`calibrated`).

HyCoCLIP App. A keeps GLIP's boxes scoring at least 0.65; another detector scores on another scale. `calibrated` is
the threshold `hypvl calibrate` found (`hypvl.grounding.calibration`) on the calibration corpus
(`grounding.calibration.corpus`: RedCaps, the corpus whose kept share HyCoCLIP reports), written beside that corpus's
grounded folder; every corpus the same box source grounds uses it, refused where the calibration was made with
another detector (id, revision, commit loaded), precision, spaCy model, min_box_side or target. A GRIT corpus keeps
the spans it ships with whatever their score (HyCoCLIP's prepare_GRIT_webdataset.py has no score threshold), and one
grounded without boxes has none to filter: neither reads the calibration. Torch-free: the workflow plans with it.
"""

import json
from pathlib import Path

from hypvl.errors import InputError

CALIBRATED = "calibrated"
SUFFIX = ".calibration.json"  # beside the grounded folder, which grounding replaces whole


def calibration_file(config: dict, corpus: str | None = None) -> Path:
    """Where `hypvl calibrate` writes its result for `corpus` (default: config `grounding.calibration.corpus`):
    `<grounded folder>.calibration.json`."""
    corpus = corpus or config["grounding"]["calibration"]["corpus"]
    if corpus not in config["grounding"]["raw"] or corpus not in config["corpora"]:
        raise InputError(f"config: calibrating corpus {corpus!r} needs grounding.raw.{corpus} and corpora.{corpus}")
    folder = Path(config["data_dir"]) / config["corpora"][corpus]
    return folder.with_name(folder.name + SUFFIX)


def reads_calibration(config: dict, corpus: str, boxes: bool = True) -> bool:
    """Whether grounding `corpus` (with `boxes`: not `--no-boxes`) takes its threshold from the calibration file."""
    settings = config["grounding"]
    return settings["box_threshold"] == CALIBRATED and boxes and settings["raw"][corpus]["format"] != "grit"


def made_with(config: dict, box_source) -> dict:
    """What a calibration must share with a grounding for its threshold to apply there."""
    settings, calibration = config["grounding"], config["grounding"]["calibration"]
    return {"detector": settings["detector"], "detector_revision": settings.get("detector_revision"),
            "detector_commit": getattr(box_source, "commit", None),
            "detector_precision": getattr(box_source, "precision", None), "spacy_model": config["spacy_model"],
            "min_box_side": settings["min_box_side"], "target_pair_share": calibration["target_pair_share"],
            "target_boxes_per_pair": calibration["target_boxes_per_pair"]}


def box_threshold(config: dict, corpus: str, box_source, boxes: bool = True) -> tuple[float | None, dict]:
    """The threshold grounding `corpus` with `box_source` applies, and how it was chosen (grounding.json's
    `box_threshold_from`): none for GRIT's own spans (0), else the config's number, or the calibration's (InputError,
    one line naming the file, where there is none or it was made otherwise)."""
    settings = config["grounding"]
    if boxes and settings["raw"][corpus]["format"] == "grit":
        return 0.0, {"from": "none: GRIT keeps its spans whatever their score (prepare_GRIT_webdataset.py)"}
    if settings["box_threshold"] != CALIBRATED:
        return settings["box_threshold"], {"from": "config"}
    if not boxes:
        return None, {"from": "none: grounded without boxes"}
    path = calibration_file(config)
    rerun = f"run `hypvl calibrate --corpus {settings['calibration']['corpus']}`"
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        theirs, threshold, kept = found["made_with"], found["box_threshold"], found["kept"]
        source = {"from": "calibration", "file": str(path.relative_to(config["data_dir"])), "corpus": found["corpus"],
                  "samples": found["samples"], "pair_share": kept["pair_share"],
                  "boxes_per_kept_pair": kept["boxes_per_kept_pair"], "target_pair_share": theirs["target_pair_share"]}
    except FileNotFoundError:
        raise InputError(f"{path}: no calibration for grounding.box_threshold: {CALIBRATED}; {rerun} first") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as error:
        raise InputError(f"{path}: not a calibration ({error!r}); {rerun} again") from None
    ours = made_with(config, box_source)
    changed = [key for key in ours if theirs.get(key) != ours[key]]
    if changed:
        made = ", ".join(f"{key} {theirs.get(key)!r}" for key in changed)
        raise InputError(f"{path}: made with {made}, this grounding's is {', '.join(repr(ours[k]) for k in changed)}; "
                         f"{rerun} again")
    return threshold, source
