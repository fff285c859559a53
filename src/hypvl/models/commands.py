"""`hypvl import-weights`: a released MERU / HyCoCLIP checkpoint turned into ours."""

from pathlib import Path

from hypvl.config import add_config_arguments, config_from_args


def _import_weights(args) -> None:
    from .checkpoints import save_checkpoint
    from .released import import_released

    config = config_from_args(args)
    model = import_released(args.weights, args.method, args.backbone, config["model"])
    recipe = {"method": args.method, "backbone": args.backbone, "overrides": {}, "model_cfg": config["model"],
              "experiment": args.experiment, "weights": str(args.weights)}
    save_checkpoint(Path(args.out), model, recipe, step=0)


def add_commands(subparsers) -> None:
    """Register `import-weights`."""
    weights = subparsers.add_parser("import-weights", help="turn a released MERU/HyCoCLIP checkpoint into ours")
    add_config_arguments(weights)
    weights.add_argument("--weights", required=True, help="the released .pth file")
    weights.add_argument("--method", required=True, choices=["clip", "meru", "hycoclip"])
    weights.add_argument("--backbone", required=True, help="vit_s16 | vit_b16 | vit_l16")
    weights.add_argument("--experiment", required=True, help="experiment id (recorded in the checkpoint)")
    weights.add_argument("--out", required=True, help="results/<scale>/models/<experiment>/checkpoint.pt")
    weights.set_defaults(func=_import_weights)
