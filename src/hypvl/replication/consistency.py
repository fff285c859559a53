"""What `hypvl compare` checks of the metric JSONs it joins in one table, beyond each file's own contents, from the
provenance they record: that they were measured under one run config, each on a model of its row's experiment, and
on the checkpoint that is there now. Snakemake decides what to rerun by file dates alone; a checkpoint replaced by
another experiment's, or changed behind an output dated in the future, is caught here, so a stale row is never
reported as current."""

import functools
import json
from pathlib import Path

from hypvl.config import shared_train_settings, steps_for
from hypvl.errors import InputError
from hypvl.outside.extras import EXTRA_EXPERIMENT
from hypvl.provenance import config_differences, file_digest
from hypvl.spec.paper import Experiment


def check_joined(measured: dict[Path, tuple[dict, Experiment]]) -> None:
    """InputError naming a metric JSON (of {path: (provenance, the row's declared experiment)}) measured under another
    run config than the rest, on the model of another experiment, or on a checkpoint that has changed since."""
    check_one_run_config({path: provenance for path, (provenance, _) in measured.items()})
    for path, (provenance, declared) in sorted(measured.items()):
        check_model(path, provenance, declared)
        check_checkpoint_unchanged(path, provenance)


def _sections(path: Path, provenance: dict) -> dict:
    """A JSON's run config by section, and each entry of `train.steps_for` its model matched as a section of its own
    (`train.steps_for[<glob>]`, from `provenance.steps_for`; a JSON of an older hypvl recorded the whole map in the
    train section, whose entries matching the model are taken): editing one experiment's entry leaves every other
    experiment's numbers comparable. The RUN_SETTINGS, which an older hypvl recorded too, are left out."""
    model = (provenance.get("model") or {}).get("experiment") or path.parent.name
    sections = dict(provenance["run_config"])
    train = sections.get("train")
    own = provenance.get("steps_for")
    if isinstance(train, dict):
        own = steps_for(model, train) if own is None and "steps_for" in train else own
        sections["train"] = shared_train_settings(train)
    sections.update({f"train.steps_for[{glob}]": steps for glob, steps in (own or {}).items()})
    return sections


def check_one_run_config(provenances: dict) -> None:
    """InputError when the metric JSONs joined in one table were measured under different run configs (or some
    without a record of theirs): per section of the run config, every JSON recording it must agree with the most
    common value (weights from outside record no `train` section, so only the models trained here are compared
    there); names a file of each and the settings that differ."""
    recorded = {path: provenance for path, provenance in provenances.items() if provenance.get("run_config")}
    unrecorded = sorted(set(provenances) - set(recorded))
    if unrecorded and recorded:
        _refuse_mixed(unrecorded[0], min(recorded), ["one records no run config (written by an older hypvl)"])
    values = {}
    for path, provenance in sorted(recorded.items()):
        for section, value in _sections(path, provenance).items():
            if value is not None:
                values.setdefault(section, []).append((path, value))
    for section, found in values.items():
        texts = [json.dumps(value, sort_keys=True) for _, value in found]
        common = max(set(texts), key=texts.count)
        odd = next((index for index, text in enumerate(texts) if text != common), None)
        if odd is not None:
            base = texts.index(common)
            _refuse_mixed(found[odd][0], found[base][0],
                          config_differences({section: found[base][1]}, {section: found[odd][1]}))


def _refuse_mixed(odd, base, differ: list[str]) -> None:
    """The InputError of a metric JSON `odd` measured under another run config than `base`."""
    raise InputError(f"{odd}: measured under another config than {base} ({'; '.join(differ[:5])}"
                     f"{'; ...' if len(differ) > 5 else ''}): rerun its experiment's evaluation under the config of "
                     f"the rest, or compare the two runs' tables separately")


def check_model(path: Path, provenance: dict, declared: Experiment) -> None:
    """InputError naming both when the model a JSON records measuring (`provenance.model`: method, backbone, data of
    a model trained here; source of weights from outside; a fine-tuning's method) is not what the row's experiment
    declares: an outside model (an extra, `hypvl evaluate --source`) in a trained row's place included. JSONs of an
    older hypvl record no model and pass."""
    model = provenance.get("model")
    if not isinstance(model, dict):
        return
    outside = model.get("source") or model.get("library") or str(model.get("experiment", "")).startswith(
        EXTRA_EXPERIMENT)
    if declared.source == "train" and outside:  # a model trained here records no source; any other is from outside
        raise InputError(f"{path}: measured on an outside model ({model.get('experiment')!r}, source "
                         f"{model.get('source') or model.get('library')!r}), not on a model trained for "
                         f"{declared.id!r}: refused (an outside model's metrics never stand for a row of the papers)")
    if declared.source != "train":
        wanted = {"source": declared.source}
    elif "base" in model:  # fine-tuned: its backbone and data are its base's
        wanted = {"method": declared.method}
    else:
        wanted = {"method": declared.method, "backbone": declared.backbone, "data": declared.data}
    differ = [f"{key} {model[key]!r}, not {value!r}" for key, value in wanted.items()
              if key in model and model[key] != value]
    if differ:
        raise InputError(f"{path}: measured on the model of {model.get('experiment')!r} ({'; '.join(differ)} as "
                         f"{declared.id!r} declares): refused (another experiment's checkpoint in its place?)")


@functools.cache
def _digest(path: str, size: int, mtime_ns: int) -> str:
    """The sha256 of a checkpoint as it is at (size, mtime): computed once per compare."""
    return file_digest(path)


def check_checkpoint_unchanged(path: Path, provenance: dict) -> None:
    """InputError when the checkpoint a JSON records measuring (its path and sha256) is there but holds another model
    now: the number is stale (retrained or replaced since, and Snakemake did not see it: an output dated in the
    future, a copy that kept its date). Its size and time unchanged since, it is not hashed again."""
    checkpoint, recorded = provenance.get("checkpoint"), provenance.get("checkpoint_sha256")
    if not checkpoint or not recorded or not Path(checkpoint).is_file():
        return
    stat = Path(checkpoint).stat()
    if (stat.st_size, stat.st_mtime_ns) == (provenance.get("checkpoint_bytes"), provenance.get("checkpoint_mtime_ns")):
        return
    digest = _digest(str(checkpoint), stat.st_size, stat.st_mtime_ns)
    if digest != recorded:
        raise InputError(f"{path}: measured on {checkpoint} with sha256 {recorded[:12]}..., which now holds "
                         f"{digest[:12]}... (changed since): stale; delete it and rerun its evaluation")
