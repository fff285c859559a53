"""`hypvl fetch-weights`: an entry of the weights manifest downloaded (as `hypvl acquire` fetches datasets);
`hypvl import-weights`: weights from outside (a released MERU/HyCoCLIP checkpoint, a public dual encoder in
open_clip's or transformers' layout) turned into the experiment's checkpoint.pt; `hypvl write-standin`: a smoke
stand-in written in such a layout from one of our checkpoints."""

import logging
from pathlib import Path

from hypvl.acquire.fetch import add_fetch_command
from hypvl.config import add_config_arguments, config_from_args
from hypvl.errors import InputError

from .sources import WEIGHTS_MANIFEST

log = logging.getLogger(__name__)


def weights_record(outside, path: Path, standin: bool) -> dict:
    """What the checkpoint records of the weights it was made from: where, each file's sha256, whether each
    was verified against a published digest, and whether they are a smoke stand-in. A file whose digest
    differs from the manifest's or from the first-fetch record (SHA256SUMS) is refused."""
    from hypvl.acquire.fetch import CHECKSUM_RECORD, RECORDS, ChecksumMismatch, read_checksum_record
    from hypvl.outside.sources import weights_manifest
    from hypvl.provenance import file_digest

    folder = path if path.is_dir() else path.parent
    if path.is_dir():
        unknown = outside.unrecognised(path)
        if unknown:
            raise InputError(f"{outside.source}: {path} holds files the manifest does not list for {outside.entry}: "
                             f"{', '.join(unknown)} (expected: {', '.join(outside.files)})")
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.name not in RECORDS
                       and not any(part.startswith(".") for part in p.relative_to(path).parts))
    else:
        files = [path]
    published = {item["path"]: item["sha256"] for item in weights_manifest()[outside.entry].get("files", ())}
    recorded = read_checksum_record(folder) if (folder / CHECKSUM_RECORD).is_file() else {}
    digests, verified = {}, {}
    for file in files:
        name = file.relative_to(folder).as_posix()
        listed = outside.checkpoint if file == path else name  # a file you hold may have any name
        digest = digests[name] = file_digest(file)
        expected = published.get(listed) or recorded.get(name)
        if expected is not None and expected != digest:
            raise ChecksumMismatch(f"{outside.source}: {file}: sha256 is {digest}, expected {expected}")
        verified[name] = published.get(listed) == digest
        if not verified[name] and not standin:
            log.warning("%s: %s has no published checksum (sha256 %s): loaded unverified", outside.source, file,
                        digest)
    return {"path": str(path), "sha256": digests, "verified": verified, "standin": standin}


def _import_weights(args) -> None:
    from hypvl.spec.load import load_spec

    from hypvl.models.checkpoints import save_checkpoint
    from hypvl.models.library_import import import_library_model
    from .released import import_released
    from .sources import outside_weights

    config = config_from_args(args)
    spec = load_spec(args.spec)
    if args.experiment not in spec.experiments:
        raise InputError(f"{args.spec}: no experiment {args.experiment!r}")
    declared = spec.experiments[args.experiment]
    outside = outside_weights(declared.source, config["weights"]["library"])
    path = Path(args.weights)
    if not path.exists():
        raise InputError(f"{declared.source}: {path} does not exist (fetch it, or set config weights.local)")
    standin = config["weights"]["standins"] is not None and declared.source not in config["weights"]["local"]
    record = weights_record(outside, path, standin)
    if outside.library is None:
        checkpoint = path / outside.checkpoint if path.is_dir() else path
        try:
            model = import_released(checkpoint, declared.method, declared.backbone, config["model"],
                                    (declared.id, declared.source))
        except InputError as exc:
            raise InputError(f"{declared.source}: {exc}") from None
        recipe = {"method": declared.method, "backbone": declared.backbone, "overrides": {},
                  "model_cfg": config["model"]}
    else:
        model = import_library_model(path, outside.library, declared.source)
        found = model.model.config.model_type if outside.library == "transformers" else "clip"
        if found != outside.architecture:
            raise InputError(f"{declared.source}: {path} holds a {found!r} model, the manifest declares "
                             f"{outside.architecture!r}")
        recipe = model.recipe()
    recipe.update(experiment=declared.id, source=declared.source, weights=record)
    save_checkpoint(Path(args.out), model, recipe, step=0)


def extra_from_args(args):
    """The ExtraModel an `import-extra` or `evaluate --model` command line declares (`--name`, `--source`,
    `--geometry`, `--method`, `--backbone`)."""
    from hypvl.outside.extras import parse_extra

    entry = {"source": args.source}
    entry.update({key: getattr(args, key) for key in ("geometry", "method", "backbone") if getattr(args, key, None)})
    return parse_extra(args.name, entry, "hypvl")


def add_extra_arguments(parser, required: bool = True) -> None:
    """The options declaring an extra model on a command line (as config `extra_models` does)."""
    from hypvl.outside.extras import GEOMETRIES
    from hypvl.methods import names

    parser.add_argument("--name", required=required, help="its name (rows extra__<name>, metrics extra_<name>)")
    parser.add_argument("--source", required=required, help="open_clip:<folder | architecture/pretrained> | "
                        "transformers:<folder | hub id> | hypvl:<checkpoint.pt> | released-format:<file.pth>")
    parser.add_argument("--geometry", choices=GEOMETRIES,
                        help="where its embeddings live (open_clip and transformers models: euclidean, the default)")
    parser.add_argument("--method", choices=list(names(released=True)), help="released-format: what the file holds")
    parser.add_argument("--backbone", help="released-format: a key of the config's model.backbones")


def _import_extra(args) -> None:
    from hypvl.models.checkpoints import save_checkpoint
    from .extra_import import import_extra
    from hypvl.methods import import_plugins

    config = config_from_args(args)
    import_plugins(config["plugins"])
    model, recipe = import_extra(extra_from_args(args), config)
    save_checkpoint(Path(args.out), model, recipe, step=0, radial_root=getattr(model, "radial_root", None))


def _write_standin(args) -> None:
    from hypvl.models.checkpoints import check_identity, read_checkpoint
    from .standins import WRITERS, write_released

    if args.model_of:  # the model it is written from, checked before anything is written
        check_identity(read_checkpoint(args.checkpoint).get("recipe"), args.checkpoint, args.model_of)
    if args.kind == "released":
        if not args.file:
            raise InputError("hypvl write-standin --kind released needs --file (the released checkpoint's name)")
        write_released(Path(args.checkpoint), Path(args.out), args.file)
    else:
        WRITERS[args.kind](Path(args.checkpoint), Path(args.out))


def add_commands(subparsers) -> None:
    """Register `fetch-weights`, `import-weights`, `import-extra` and `write-standin`."""
    add_fetch_command(subparsers, "fetch-weights", WEIGHTS_MANIFEST, "download weights from outside (the weights "
                                                                     "manifest's entries)")
    weights = subparsers.add_parser("import-weights", help="turn weights from outside into an experiment's checkpoint")
    add_config_arguments(weights)
    weights.add_argument("--spec", required=True, help="replication/<paper>.yaml declaring the experiment")
    weights.add_argument("--experiment", required=True, help="an experiment whose source is released: or pretrained:")
    weights.add_argument("--weights", required=True,
                         help="its weights: the folder fetched (or stood in) for its source, or a file/folder you hold")
    weights.add_argument("--out", required=True, help="results/<scale>/models/<experiment>/checkpoint.pt")
    weights.set_defaults(func=_import_weights)
    extra = subparsers.add_parser("import-extra", help="turn an extra model (config extra_models) into a checkpoint")
    add_config_arguments(extra)
    add_extra_arguments(extra)
    extra.add_argument("--out", required=True, help="results/<scale>/models/extra_<name>/checkpoint.pt")
    extra.set_defaults(func=_import_extra)
    standin = subparsers.add_parser("write-standin",
                                    help="write one of our checkpoints in an outside source's on-disk layout (smoke)")
    standin.add_argument("--kind", required=True, choices=["released", "open_clip", "transformers"])
    standin.add_argument("--checkpoint", required=True, help="our checkpoint.pt to write out")
    standin.add_argument("--file", help="released: the checkpoint's file name (e.g. meru_vit_s.pth)")
    standin.add_argument("--model-of", help="the experiment whose model the checkpoint must hold")
    standin.add_argument("--out", required=True, help="the source's folder under the weights folder")
    standin.set_defaults(func=_write_standin)
