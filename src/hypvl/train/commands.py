"""`hypvl train`: train one experiment of a replication spec."""

import logging
from pathlib import Path

from hypvl.config import add_config_arguments, config_from_args, positive_int
from hypvl.errors import InputError
from hypvl.io import check_writable
from hypvl.methods import import_plugins

log = logging.getLogger(__name__)
MAX_SEED = 2**32 - 1


def experiment_from_spec(spec_path, experiment_id: str, seed: int | None = None) -> dict:
    """The experiment `experiment_id` of the spec at `spec_path`, as the trainer takes it; it must be trained.
    Another `seed` than the declared one trains its seed variant (`<id>__seed<N>`, config `seeds`)."""
    from hypvl.spec.load import load_spec
    from hypvl.spec.paper import seed_variant

    spec = load_spec(spec_path)
    if experiment_id not in spec.experiments:
        raise InputError(f"{spec_path}: no experiment {experiment_id!r} (known: {sorted(spec.experiments)})")
    exp = spec.experiments[experiment_id]
    if exp.source != "train":
        raise InputError(f"{spec_path}: experiment {exp.id!r} has source {exp.source!r}; only 'train' trains")
    seed = exp.seed if seed is None else seed
    if not 0 <= seed <= MAX_SEED:
        raise InputError(f"--seed {seed}: a seed is a whole number from 0 to {MAX_SEED} (what every random generator "
                         "takes)")
    return {"id": seed_variant(exp, seed), "method": exp.method, "backbone": exp.backbone, "data": exp.data,
            "boxes": exp.boxes, "seed": seed, "overrides": dict(exp.overrides)}


def standin_experiment(spec_path, experiment_id: str, config: dict) -> tuple[dict, str]:
    """The training run of the smoke stand-in of `experiment_id` (a pretrained source loaded by transformers,
    whose architecture no model of ours converts into): CLIP's contrastive loss on the corpus and at the size
    config `weights.standins` give. Returns it and the architecture (transformers' model type)."""
    from hypvl.outside.sources import outside_weights
    from hypvl.spec.load import load_spec

    standins = config["weights"]["standins"]
    if standins is None:
        raise InputError("config: weights.standins is null (this scale fetches the real weights)")
    spec = load_spec(spec_path)
    if experiment_id not in spec.experiments:
        raise InputError(f"{spec_path}: no experiment {experiment_id!r} (known: {sorted(spec.experiments)})")
    exp = spec.experiments[experiment_id]
    outside = outside_weights(exp.source, config["weights"]["library"]) if exp.source != "train" else None
    if outside is None or outside.library != "transformers":
        raise InputError(f"{spec_path}: experiment {exp.id!r} (source {exp.source!r}) has no trained stand-in; "
                         "only a pretrained source loaded by transformers has one")
    backbones = standins["backbones"]
    if exp.backbone not in backbones:
        raise InputError(f"config: weights.standins.backbones has no entry for {exp.backbone!r} ({exp.id})")
    return {"id": exp.id, "method": "clip", "backbone": backbones[exp.backbone], "data": standins["data"],
            "boxes": False, "seed": exp.seed, "overrides": {}}, outside.architecture


def corpus_shards(config: dict, corpus: str) -> list[Path]:
    """The shard files of training corpus `corpus` under the config's data_dir."""
    from hypvl.data.formats.shards import shard_paths

    if corpus not in config["corpora"]:
        raise InputError(f"config: corpus {corpus!r} is not in `corpora` ({sorted(config['corpora'])})")
    return shard_paths(Path(config["data_dir"]) / config["corpora"][corpus])


def _standin_builder(architecture: str, config: dict, backbone: str, shards: list[Path]):
    """A callable making the stand-in model (its vocabulary, for ALIGN's BERT, from the corpus's texts)."""
    from hypvl.data.formats.grounded import iter_grounded
    from hypvl.outside.standins import standin_model

    def texts():
        for shard in shards:
            for record in iter_grounded(shard):
                yield record.caption
                yield from (phrase for _, phrase in record.boxes)

    return lambda: standin_model(architecture, config["model"], backbone, texts())


def _train(args) -> None:
    from hypvl.runtime.devices import use_threads
    from hypvl.models.checkpoints import check_identity, read_checkpoint

    from .recipe import resolve_schedule, train_section_for
    from .trainer import train

    config = config_from_args(args)
    check_writable(args.out)  # a read-only or full disk is said before the training, not after it
    use_threads(args.threads)
    import_plugins(config["plugins"])  # a plug-in's method, before the spec naming it is read
    build = None
    if args.standin:
        experiment, architecture = standin_experiment(args.spec, args.experiment, config)
        shards = corpus_shards(config, experiment["data"])
        build = _standin_builder(architecture, config, experiment["backbone"], shards)
    else:
        experiment = experiment_from_spec(args.spec, args.experiment, args.seed)
        # the schedule's bounds (a derived batch of 10^9, say), checked before the corpus is read
        resolve_schedule(experiment["overrides"], train_section_for(experiment["id"], config["train"]))
        start = experiment["overrides"].get("init_from")
        if start is not None and args.init_checkpoint is not None:  # the model it starts from, checked before the work
            check_identity(read_checkpoint(args.init_checkpoint).get("recipe"), args.init_checkpoint, start)
        shards = corpus_shards(config, experiment["data"])
    summary = train(experiment, config["model"], config["train"], shards, Path(args.out), progress=not args.quiet,
                    init_checkpoint=args.init_checkpoint, build=build)
    if not summary:  # a data-parallel process other than the main one
        return
    data = summary["data"]
    log.info("%s: %d steps in %s s, final loss %.4f, %d samples read (%s: %d pairs and %d boxes a pass), %d corrupt "
             "images skipped", experiment["id"], summary["schedule"]["steps"], summary["seconds"],
             summary["final"]["loss"], summary["samples_read"], data["mode"], data["corpus_pairs"],
             data["corpus_boxes"], summary["corrupt_images_skipped"])


def _finetune(args) -> None:
    from hypvl.runtime.devices import use_threads

    from .radial import finetune
    from .radial_recipe import radial_recipe

    config = config_from_args(args)
    check_writable(args.out)
    use_threads(args.threads)
    import_plugins(config["plugins"])
    experiment = experiment_from_spec(args.spec, args.experiment)
    try:
        radial_recipe(experiment)  # every override checked, naming the spec, before a weight or a row is read
    except InputError as exc:
        raise InputError(f"{args.spec}: {exc}") from None
    summary = finetune(experiment, args.base_checkpoint, args.train_csv, config["radial_ft"], Path(args.out),
                       config["train"]["telemetry"], progress=not args.quiet, images=args.train_images)
    log.info("%s: %d steps (%d epochs of %d rows) in %s s, final loss %.4f", experiment["id"],
             summary["schedule"]["steps"], summary["schedule"]["epochs"], summary["items"], summary["seconds"],
             summary["final"]["loss"])


def add_commands(subparsers) -> None:
    """Register `train` and `finetune`."""
    train = subparsers.add_parser("train", help="train one experiment of a replication spec (data-parallel under "
                                  "`torchrun --nproc-per-node N -m hypvl.cli train ...`; resumes from --out/resume.pt)")
    add_config_arguments(train)
    train.add_argument("--spec", required=True, help="replication/<paper>.yaml")
    train.add_argument("--experiment", required=True, help="experiment id in the spec")
    train.add_argument("--seed", type=int, default=None,
                       help="train with this seed instead of the declared one (recorded as <experiment>__seed<N>)")
    train.add_argument("--out", required=True, help="results/<scale>/models/<experiment>")
    train.add_argument("--init-checkpoint", type=Path, default=None,
                       help="checkpoint of the experiment named by the `init_from` override")
    train.add_argument("--standin", action="store_true",
                       help="train the smoke stand-in of an experiment whose weights come from transformers")
    train.add_argument("--threads", type=positive_int, default=1, help="torch threads")
    train.add_argument("--quiet", action="store_true",
                       help="no progress bar: a plain progress line every train.telemetry.log_every steps")
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
