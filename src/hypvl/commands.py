"""`hypvl synthesize`, `hypvl train` and `hypvl import-weights`: the data and model steps."""

from pathlib import Path

from hypvl.config import add_config_arguments, config_from_args
from hypvl.errors import InputError


def _set_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def _synthesize(args) -> None:
    import time

    from hypvl.data.synthetic.build import WorldSettings, build_world

    config = config_from_args(args)
    start = time.perf_counter()
    raw = {corpus: entry["path"] for corpus, entry in config["grounding"]["raw"].items()}
    manifest = build_world(WorldSettings(**config["smoke_world"]), Path(args.out), raw, config["eval"]["datasets"],
                           config["eval"]["classification_dir"])
    print(f"smoke world in {args.out}: corpora {sorted(manifest['corpora'])}, {len(manifest['classification'])} "
          f"classification sets, eval sets {sorted(manifest['eval'])} ({time.perf_counter() - start:.1f} s)")


def _experiment(args) -> dict:
    from hypvl.replication.spec import load_spec

    spec = load_spec(args.spec)
    if args.experiment not in spec.experiments:
        raise InputError(f"{args.spec}: no experiment {args.experiment!r} (known: {sorted(spec.experiments)})")
    exp = spec.experiments[args.experiment]
    if exp.source != "train":
        raise InputError(f"{args.spec}: experiment {exp.id!r} has source {exp.source!r}; only 'train' trains")
    return {"id": exp.id, "method": exp.method, "backbone": exp.backbone, "data": exp.data, "boxes": exp.boxes,
            "seed": exp.seed, "overrides": dict(exp.overrides)}


def corpus_shards(config: dict, corpus: str) -> list[Path]:
    """The shard files of training corpus `corpus` under the config's data_dir."""
    if corpus not in config["corpora"]:
        raise InputError(f"config: corpus {corpus!r} is not in `corpora` ({sorted(config['corpora'])})")
    from hypvl.data.formats.shards import shard_paths

    return shard_paths(Path(config["data_dir"]) / config["corpora"][corpus])


def _train(args) -> None:
    from hypvl.train.trainer import train

    config = config_from_args(args)
    _set_threads(args.threads)
    experiment = _experiment(args)
    summary = train(experiment, config["model"], config["train"], corpus_shards(config, experiment["data"]),
                    Path(args.out), progress=not args.quiet, init_checkpoint=args.init_checkpoint)
    print(f"{experiment['id']}: {summary['schedule']['steps']} steps in {summary['seconds']} s, "
          f"final loss {summary['final']['loss']:.4f}, {summary['samples_read']} samples read, "
          f"{summary['corrupt_images_skipped']} corrupt images skipped")


def _import_weights(args) -> None:
    from hypvl.models.released import import_released
    from hypvl.train.checkpoints import save_checkpoint

    config = config_from_args(args)
    model = import_released(args.weights, args.method, args.backbone, config["model"])
    recipe = {"method": args.method, "backbone": args.backbone, "overrides": {}, "model_cfg": config["model"],
              "experiment": args.experiment, "weights": str(args.weights)}
    save_checkpoint(Path(args.out), model, recipe, step=0)


def add_commands(subparsers) -> None:
    """Register `synthesize`, `train` and `import-weights`."""
    synth = subparsers.add_parser("synthesize", help="write the smoke world (training corpora, eval sets)")
    add_config_arguments(synth)
    synth.add_argument("--out", required=True, help="data/smoke")
    synth.set_defaults(func=_synthesize)

    train = subparsers.add_parser("train", help="train one experiment of a replication spec")
    add_config_arguments(train)
    train.add_argument("--spec", required=True, help="replication/<paper>.yaml")
    train.add_argument("--experiment", required=True, help="experiment id in the spec")
    train.add_argument("--out", required=True, help="results/<scale>/models/<experiment>")
    train.add_argument("--init-checkpoint", type=Path, default=None,
                       help="checkpoint of the experiment named by the `init_from` override")
    train.add_argument("--threads", type=int, default=1, help="torch threads")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.set_defaults(func=_train)

    weights = subparsers.add_parser("import-weights", help="turn a released MERU/HyCoCLIP checkpoint into ours")
    add_config_arguments(weights)
    weights.add_argument("--weights", required=True, help="the released .pth file")
    weights.add_argument("--method", required=True, choices=["clip", "meru", "hycoclip"])
    weights.add_argument("--backbone", required=True, help="vit_s16 | vit_b16 | vit_l16")
    weights.add_argument("--experiment", required=True, help="experiment id (recorded in the checkpoint)")
    weights.add_argument("--out", required=True, help="results/<scale>/models/<experiment>/checkpoint.pt")
    weights.set_defaults(func=_import_weights)
