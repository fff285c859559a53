"""`hypvl synthesize`, `hypvl train`, `hypvl import-weights` and `hypvl evaluate`: data, models, evaluation."""

import time
from pathlib import Path

from hypvl.config import add_config_arguments, config_from_args
from hypvl.errors import InputError


def _set_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def _synthesize(args) -> None:
    from hypvl.data.synthetic.build import WorldSettings, build_world

    config = config_from_args(args)
    build_world(WorldSettings(**config["smoke_world"]), Path(args.out))


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
    folder = Path(config["data_dir"]) / config["corpora"][corpus]
    shards = sorted(folder.glob("*.tar"))
    if not shards:
        raise InputError(f"{folder}: no .tar shards for corpus {corpus!r}")
    return shards


def _train(args) -> None:
    from hypvl.train.trainer import train

    config = config_from_args(args)
    _set_threads(args.threads)
    experiment = _experiment(args)
    summary = train(experiment, config["model"], config["train"], corpus_shards(config, experiment["data"]),
                    Path(args.out), progress=not args.quiet)
    print(f"{experiment['id']}: {summary['schedule']['steps']} steps in {summary['seconds']} s, "
          f"final loss {summary['final']['loss']:.4f}")


def _evaluate_zeroshot(args) -> None:
    from hypvl.data.catalog import load_dataset_info
    from hypvl.evaluate.results import write_metrics
    from hypvl.evaluate.tasks import zero_shot_datasets
    from hypvl.evaluate.zeroshot import evaluate_zero_shot
    from hypvl.models.encoders import Tokenizer
    from hypvl.replication.provenance import config_hash
    from hypvl.train.checkpoints import load_checkpoint

    config = config_from_args(args)
    _set_threads(args.threads)
    model, recipe = load_checkpoint(args.checkpoint)
    model_cfg = recipe["model_cfg"]
    tokenizer = Tokenizer(model_cfg["text"]["context_length"])
    root = Path(config["data_dir"]) / config["eval"]["classification_dir"]
    digest = config_hash({"recipe": recipe, "eval": config["eval"], "data_dir": config["data_dir"]})
    smoke = config["scale"] == "smoke"
    for name in args.datasets or zero_shot_datasets(config["scale"]):
        start = time.perf_counter()
        info = load_dataset_info(name)
        result = evaluate_zero_shot(model, tokenizer, root / name, config["eval"]["classification_split"],
                                    list(info.prompts), model_cfg["image_size"], config["eval"]["batch_size"],
                                    name, class_names=None if smoke else list(info.class_names))
        write_metrics(Path(args.out_dir) / f"zs_{name}.json", args.experiment, f"zs_{name}", config["scale"],
                      result.metrics, result.n_samples, digest, time.perf_counter() - start)


def _import_weights(args) -> None:
    from hypvl.models.released import import_released
    from hypvl.train.checkpoints import save_checkpoint

    config = config_from_args(args)
    model = import_released(args.weights, args.method, args.backbone, config["model"])
    recipe = {"method": args.method, "backbone": args.backbone, "overrides": {}, "model_cfg": config["model"],
              "experiment": args.experiment, "weights": str(args.weights)}
    save_checkpoint(Path(args.out), model, recipe, step=0)


def add_commands(subparsers) -> None:
    """Register `synthesize`, `train` and `evaluate zeroshot`."""
    synth = subparsers.add_parser("synthesize", help="write the smoke world (training corpora, eval sets)")
    add_config_arguments(synth)
    synth.add_argument("--out", required=True, help="data/smoke")
    synth.set_defaults(func=_synthesize)

    train = subparsers.add_parser("train", help="train one experiment of a replication spec")
    add_config_arguments(train)
    train.add_argument("--spec", required=True, help="replication/<paper>.yaml")
    train.add_argument("--experiment", required=True, help="experiment id in the spec")
    train.add_argument("--out", required=True, help="results/<scale>/models/<experiment>")
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

    evaluate = subparsers.add_parser("evaluate", help="evaluate a checkpoint")
    tasks = evaluate.add_subparsers(dest="group", required=True)
    zeroshot = tasks.add_parser("zeroshot", help="zero-shot classification on every set of the scale")
    add_config_arguments(zeroshot)
    zeroshot.add_argument("--experiment", required=True, help="experiment id (recorded in the JSONs)")
    zeroshot.add_argument("--checkpoint", required=True, help="checkpoint.pt")
    zeroshot.add_argument("--out-dir", required=True, help="results/<scale>/metrics/<experiment>")
    zeroshot.add_argument("--datasets", nargs="*", default=None, help="subset of datasets (default: all)")
    zeroshot.add_argument("--threads", type=int, default=1, help="torch threads")
    zeroshot.set_defaults(func=_evaluate_zeroshot)
