"""`hypvl evaluate <group>`: load one checkpoint, or any model from its source (`--source`, as config `extra_models`
declares one: no spec, no workflow), and write one metrics JSON per task of the group, each said in a log line."""

import importlib
import logging
import time
from pathlib import Path

from hypvl.config import add_config_arguments, config_from_args, positive_int, shared_train_settings, steps_for
from hypvl.data.catalog import PROMPT_SETS
from hypvl.errors import InputError
from hypvl.outside.commands import add_extra_arguments
from hypvl.tasks import GROUP_MODULES, declared_tasks, group_tasks

log = logging.getLogger(__name__)
SHOWN = 3  # metrics a task's log line shows (a job's log says each task as it is written)

# what a metrics JSON records of the model it measured (`provenance.model`), for `hypvl compare` to check
MODEL_IDENTITY = ("experiment", "method", "backbone", "data", "source", "library")


def evaluate_group(args) -> None:
    """Compute every task of `args.group` (or `args.tasks`) and write `<out_dir>/<task>.json` for each."""
    from hypvl.acquire.fingerprint import data_manifest_hash
    from hypvl.runtime.devices import on_device, select_device, use_threads
    from hypvl.evaluate.context import EvalContext
    from hypvl.evaluate.features import check_loader_memory, set_loader_workers
    from hypvl.evaluate.results import write_metrics
    from hypvl.io import check_writable
    from hypvl.models.checkpoints import load_checkpoint
    from hypvl.methods import import_plugins
    from hypvl.provenance import checkpoint_record, config_hash

    extra = outside_model(args)
    config = config_from_args(args)
    if extra is not None:
        check_outside_out_dir(Path(args.out_dir), config["replication_dir"])
    if getattr(args, "vlchecklist_skip_missing", False):  # recorded in the config hash only when set
        config["eval"]["vlchecklist_skip_missing"] = True
    available = group_tasks(config["scale"])[args.group]
    tasks = args.tasks or available
    unknown = sorted(set(tasks) - set(available))
    if unknown:
        raise InputError(f"group {args.group!r} at scale {config['scale']!r} has no tasks {unknown} "
                         f"(it has {available})")
    check_writable(args.out_dir)  # a read-only or full disk is said before the work, not after it
    use_threads(args.threads)
    set_loader_workers(config["eval"]["num_workers"])
    import_plugins(config["plugins"])
    if extra is not None:  # any model, imported in this process as `hypvl import-extra` would
        from hypvl.outside.extra_import import import_extra

        model, recipe = import_extra(extra, config)
        args.experiment = extra.experiment
        weights = {"checkpoint_sha256": ";".join(f"{name}={digest}" for name, digest in recipe["weights"]["sha256"]
                                                 .items())}
    else:
        if args.checkpoint is None or args.experiment is None:
            raise InputError("give --experiment and --checkpoint, or --source (any model)")
        model, recipe = load_checkpoint(args.checkpoint, getattr(args, "model_of", None) or args.experiment)
        weights = checkpoint_record(args.checkpoint)
    check_loader_memory(config["eval"]["batch_size"], model.image_size)
    model = on_device(model, select_device(config["eval"]["device"]))
    ctx = EvalContext(model, model.tokenizer, model.image_size, config, args.prompts)
    digest = config_hash({"recipe": recipe, "eval": config["eval"], "data_dir": config["data_dir"],
                          "prompts": args.prompts})
    run = run_config(config, recipe)
    inputs = {"run_config_hash": config_hash(run), "run_config": run, "steps_for": own_steps_for(recipe),
              "data_manifest_hash": data_manifest_hash(config["data_dir"]), **weights,
              "model": model_identity(recipe), "prompts": args.prompts}
    module = importlib.import_module(GROUP_MODULES[args.group])
    for number, task in enumerate(tasks, 1):
        start = time.perf_counter()
        result = module.run(ctx, task)
        seconds = time.perf_counter() - start
        write_metrics(Path(args.out_dir) / f"{task}.json", args.experiment, task, config["scale"], result.metrics,
                      result.n_samples, digest, seconds, inputs)
        shown = ", ".join(f"{name} {float(value):.4g}" for name, value in list(result.metrics.items())[:SHOWN])
        log.info("%s %s (task %d of %d): %s%s; %d samples, %.1f s", args.experiment, task, number, len(tasks), shown,
                 ", ..." if len(result.metrics) > SHOWN else "", result.n_samples, seconds)


def outside_model(args):
    """The ExtraModel of `--source` (None without it). Its metrics are recorded as its own experiment, extra_<name>,
    never as an experiment of the papers: InputError names an `--experiment` other than that."""
    if getattr(args, "source", None) is None:
        return None
    from hypvl.outside.commands import extra_from_args

    extra = extra_from_args(args)
    if args.experiment not in (None, extra.experiment):
        raise InputError(f"--experiment {args.experiment}: a model from --source is recorded as {extra.experiment} "
                         f"(--name {extra.name}), never as another experiment: an outside model's metrics stand for "
                         "no row of the papers")
    return extra


def check_outside_out_dir(out_dir: Path, replication_dir) -> None:
    """InputError where an outside model's metrics would go into the folder of an experiment of the papers' specs
    (`<metrics>/<experiment>`, a seed variant's too): they would stand in its place."""
    from hypvl.spec.document import read_yaml
    from hypvl.spec.paper import SEED_MARK

    folder = out_dir.name.partition(SEED_MARK)[0]
    for path in sorted(Path(replication_dir).glob("*.yaml")):
        experiments = read_yaml(path).get("experiments")
        if isinstance(experiments, dict) and folder in experiments:
            raise InputError(f"--out-dir {out_dir}: the metrics folder of {folder!r}, an experiment of {path}: an "
                             "outside model's metrics (--source) never go where a paper's row reads them")


def model_identity(recipe: dict) -> dict:
    """What a metrics JSON records of the model it measured (`provenance.model`, which `hypvl compare` checks against
    the row's experiment): its experiment, method, backbone, data, source and library where the recipe names them; a
    fine-tuned model by its fine-tuning method and the experiment it started from instead."""
    identity = {key: recipe[key] for key in MODEL_IDENTITY if recipe.get(key) is not None}
    fine_tuning = recipe.get("fine_tuning")
    if isinstance(fine_tuning, dict):
        identity = {"experiment": recipe.get("experiment"), "method": fine_tuning.get("method"),
                    "base": fine_tuning.get("base_experiment")}
    return identity


def run_config(config: dict, recipe: dict) -> dict:
    """The settings every model of a run shares: the model and training sections the checkpoint was trained under
    (None for imported weights; `train.steps_for` apart, `own_steps_for`; the RUN_SETTINGS, which change no number,
    left out) and the evaluation's CPU code path and section. Numbers measured under two run configs are never joined
    in one table (`hypvl compare`)."""
    train = recipe.get("train_cfg")
    if isinstance(train, dict):
        train = shared_train_settings(train)
    return {"scale": config["scale"], "model": recipe.get("model_cfg"), "train": train,
            "cpu_code_path": config["cpu_code_path"], "eval": config["eval"]}


def own_steps_for(recipe: dict) -> dict | None:
    """The entries of `train.steps_for` the checkpoint's experiment matches (None for imported weights): its own
    setting, which `hypvl compare` checks only against the models matching the same entries (editing an entry
    retrains the models it matches and leaves every other model's numbers comparable)."""
    train = recipe.get("train_cfg")
    return steps_for(str(recipe.get("experiment")), train) if isinstance(train, dict) else None


def add_commands(subparsers) -> None:
    """Register `evaluate <group>` for every task group."""
    evaluate = subparsers.add_parser("evaluate", help="evaluate a checkpoint on one task group")
    groups = evaluate.add_subparsers(dest="group", required=True)
    tasks = declared_tasks().values()
    for group in GROUP_MODULES:
        ids = sorted(task.id for task in tasks if task.group == group)
        shown = ", ".join(ids) if len(ids) <= 4 else f"{', '.join(ids[:3])}, ... ({len(ids)} tasks)"
        parser = groups.add_parser(group, help=f"tasks {shown}", description=f"The {group!r} group's tasks, written "
                                   f"as one JSON each into --out-dir: {', '.join(ids)}.")
        add_config_arguments(parser)
        parser.add_argument("--experiment", help="experiment id (recorded in the JSONs; with --source: extra_<name>, "
                                                 "the only one it takes)")
        parser.add_argument("--checkpoint", help="checkpoint.pt")
        add_extra_arguments(parser.add_argument_group("any model, in place of --checkpoint (as config extra_models)"),
                            required=False)
        parser.add_argument("--model-of", default=None,
                            help="the experiment whose model the checkpoint must hold (default: --experiment; an "
                                 "experiment whose recipe repeats another's is evaluated on that one's model)")
        parser.add_argument("--out-dir", required=True, help="results/<scale>/metrics/<experiment>")
        parser.add_argument("--tasks", nargs="*", default=None, help="subset of the group's task ids (default: all)")
        parser.add_argument("--threads", type=positive_int, default=1, help="torch threads")
        if group == "scene":
            parser.add_argument("--vlchecklist-skip-missing", action="store_true",
                                help="drop VL-CheckList items whose image is missing (upstream's loader) and "
                                     "report their count as skipped_images, instead of stopping with an error")
        parser.add_argument("--prompts", choices=PROMPT_SETS, default="meru",
                            help="zero-shot prompt set: MERU's Table 8 or CLIP's (experiment override eval_prompts)")
        parser.set_defaults(func=evaluate_group, name="model")
