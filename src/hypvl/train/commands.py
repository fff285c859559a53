"""`hypvl train`: train one experiment of a replication spec."""

import logging
from pathlib import Path

from hypvl.config import add_config_arguments, config_from_args, positive_int
from hypvl.errors import InputError

log = logging.getLogger(__name__)


def experiment_from_spec(spec_path, experiment_id: str, seed: int | None = None) -> dict:
    """The experiment `experiment_id` of the spec at `spec_path`, as the trainer takes it; it must be trained.
    Another `seed` than the declared one trains its seed variant (`<id>__seed<N>`, config `seeds`)."""
    from hypvl.spec import load_spec, seed_variant

    spec = load_spec(spec_path)
    if experiment_id not in spec.experiments:
        raise InputError(f"{spec_path}: no experiment {experiment_id!r} (known: {sorted(spec.experiments)})")
    exp = spec.experiments[experiment_id]
    if exp.source != "train":
        raise InputError(f"{spec_path}: experiment {exp.id!r} has source {exp.source!r}; only 'train' trains")
    seed = exp.seed if seed is None else seed
    return {"id": seed_variant(exp, seed), "method": exp.method, "backbone": exp.backbone, "data": exp.data,
            "boxes": exp.boxes, "seed": seed, "overrides": dict(exp.overrides)}


def corpus_shards(config: dict, corpus: str) -> list[Path]:
    """The shard files of training corpus `corpus` under the config's data_dir."""
    from hypvl.data.formats.shards import shard_paths

    if corpus not in config["corpora"]:
        raise InputError(f"config: corpus {corpus!r} is not in `corpora` ({sorted(config['corpora'])})")
    return shard_paths(Path(config["data_dir"]) / config["corpora"][corpus])


def _train(args) -> None:
    import torch

    from .trainer import train

    config = config_from_args(args)
    torch.set_num_threads(args.threads)
    experiment = experiment_from_spec(args.spec, args.experiment, args.seed)
    summary = train(experiment, config["model"], config["train"], corpus_shards(config, experiment["data"]),
                    Path(args.out), progress=not args.quiet, init_checkpoint=args.init_checkpoint)
    log.info("%s: %d steps in %s s, final loss %.4f, %d samples read, %d corrupt images skipped", experiment["id"],
             summary["schedule"]["steps"], summary["seconds"], summary["final"]["loss"], summary["samples_read"],
             summary["corrupt_images_skipped"])


def add_commands(subparsers) -> None:
    """Register `train`."""
    train = subparsers.add_parser("train", help="train one experiment of a replication spec")
    add_config_arguments(train)
    train.add_argument("--spec", required=True, help="replication/<paper>.yaml")
    train.add_argument("--experiment", required=True, help="experiment id in the spec")
    train.add_argument("--seed", type=int, default=None,
                       help="train with this seed instead of the declared one (recorded as <experiment>__seed<N>)")
    train.add_argument("--out", required=True, help="results/<scale>/models/<experiment>")
    train.add_argument("--init-checkpoint", type=Path, default=None,
                       help="checkpoint of the experiment named by the `init_from` override")
    train.add_argument("--threads", type=positive_int, default=1, help="torch threads")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.set_defaults(func=_train)
