"""`hypvl train`: train one experiment of a replication spec."""

import logging
from pathlib import Path

from hypvl.config import add_config_arguments, config_from_args, positive_int
from hypvl.errors import InputError

log = logging.getLogger(__name__)


def experiment_from_spec(spec_path, experiment_id: str) -> dict:
    """The experiment `experiment_id` of the spec at `spec_path`, as the trainer takes it; it must be trained."""
    from hypvl.spec import load_spec

    spec = load_spec(spec_path)
    if experiment_id not in spec.experiments:
        raise InputError(f"{spec_path}: no experiment {experiment_id!r} (known: {sorted(spec.experiments)})")
    exp = spec.experiments[experiment_id]
    if exp.source != "train":
        raise InputError(f"{spec_path}: experiment {exp.id!r} has source {exp.source!r}; only 'train' trains")
    return {"id": exp.id, "method": exp.method, "backbone": exp.backbone, "data": exp.data, "boxes": exp.boxes,
            "seed": exp.seed, "overrides": dict(exp.overrides)}


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
    experiment = experiment_from_spec(args.spec, args.experiment)
    summary = train(experiment, config["model"], config["train"], corpus_shards(config, experiment["data"]),
                    Path(args.out), progress=not args.quiet, init_checkpoint=args.init_checkpoint)
    log.info("%s: %d steps in %s s, final loss %.4f, %d samples read, %d corrupt images skipped", experiment["id"],
             summary["schedule"]["steps"], summary["seconds"], summary["final"]["loss"], summary["samples_read"],
             summary["corrupt_images_skipped"])


def _finetune(args) -> None:
    import torch

    from .radial import finetune
    from .radial_recipe import radial_recipe

    config = config_from_args(args)
    torch.set_num_threads(args.threads)
    experiment = experiment_from_spec(args.spec, args.experiment)
    try:
        radial_recipe(experiment)  # every override checked, naming the spec, before a weight or a row is read
    except InputError as exc:
        raise InputError(f"{args.spec}: {exc}") from None
    summary = finetune(experiment, args.base_checkpoint, args.train_csv, config["radial_ft"], Path(args.out),
                       progress=not args.quiet, images=args.train_images)
    log.info("%s: %d steps (%d epochs of %d rows) in %s s, final loss %.4f", experiment["id"],
             summary["schedule"]["steps"], summary["schedule"]["epochs"], summary["items"], summary["seconds"],
             summary["final"]["loss"])


def add_commands(subparsers) -> None:
    """Register `train` and `finetune`."""
    train = subparsers.add_parser("train", help="train one experiment of a replication spec")
    add_config_arguments(train)
    train.add_argument("--spec", required=True, help="replication/<paper>.yaml")
    train.add_argument("--experiment", required=True, help="experiment id in the spec")
    train.add_argument("--out", required=True, help="results/<scale>/models/<experiment>")
    train.add_argument("--init-checkpoint", type=Path, default=None,
                       help="checkpoint of the experiment named by the `init_from` override")
    train.add_argument("--threads", type=positive_int, default=1, help="torch threads")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.set_defaults(func=_train)

    finetune = subparsers.add_parser("finetune", help="align the text tower of a model to HierarCaps (radial_ft)")
    add_config_arguments(finetune)
    finetune.add_argument("--spec", required=True, help="replication/<paper>.yaml")
    finetune.add_argument("--experiment", required=True, help="a radial_ft experiment of the spec")
    finetune.add_argument("--base-checkpoint", type=Path, required=True,
                          help="checkpoint of the model the experiment's `base` override names")
    finetune.add_argument("--train-csv", type=Path, required=True, help="HierarCaps hierarcaps_train.csv(.gz)")
    finetune.add_argument("--train-images", type=Path, default=None,
                          help="CC3M shards holding the train rows' images (the CLIP objective reads them)")
    finetune.add_argument("--out", required=True, help="results/<scale>/models/<experiment>")
    finetune.add_argument("--threads", type=positive_int, default=1, help="torch threads")
    finetune.add_argument("--quiet", action="store_true", help="no progress bar")
    finetune.set_defaults(func=_finetune)
