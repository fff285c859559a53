"""Paper-scale data acquisition from the manifest `sources.yaml`.

Each dataset lists HTTPS files (`files`), a Hugging Face Hub snapshot (`hf_snapshot`: repo,
revision, allow_patterns, and `repo_type: model` for a model repository, e.g. the weights of
`hypvl/outside/weights.yaml`), or is `manual: true` with instructions for a human and the
files the human step must leave. Files are downloaded by `hypvl.acquire.download` (resumable, checked against the
manifest's sha256 or md5, bounded in time, https only) and archives unpacked by `hypvl.acquire.unpack` (bounded in
size, all or nothing). A published digest names where it was
published (`checksum_source`), a Hub revision pinned to a commit where that commit was found
(`revision_source`). Where no checksum is published (`sha256: null`, and every file of a Hub
snapshot) the first fetch computes one, records it in `<dest>/SHA256SUMS` (`sha256sum -c` format)
and says the file is unverified; later fetches verify against it. A Hub revision that is not a
commit (a branch) is resolved on the first fetch, said so, and the commit recorded in
`<dest>/HUB_COMMITS`; later fetches use it.
"""

import logging
from pathlib import Path

from hypvl.errors import InputError
from hypvl.io import atomic_write, write_json
from hypvl.provenance import file_digest

from .download import ChecksumMismatch, fetch_file, url_opener, verify
from .lock import LOCK, writing_into
from .manifest import SOURCES_PATH, expected_files, is_hex, load_sources, pinned, trust
from .mirror import Mirror
from .unpack import check_archive, unpack

log = logging.getLogger(__name__)

CHECKSUM_RECORD = "SHA256SUMS"
HUB_RECORD = "HUB_COMMITS"  # "<commit>  <repo>" per Hub snapshot whose manifest revision is not a commit
RECORDS = (CHECKSUM_RECORD, HUB_RECORD, LOCK)  # what a fetch leaves in a folder beside the files it fetched


class ManualStepRequired(InputError):
    """A dataset needs a human step (account, licence, dead host); `instructions` say which."""

    def __init__(self, name, instructions, missing):
        self.dataset, self.instructions, self.missing = name, instructions, missing
        super().__init__(f"dataset {name!r} needs a manual step; missing {missing}.\n{instructions}")


def read_checksum_record(dest, record=CHECKSUM_RECORD, length=64):
    """{name: hex digest} recorded under `dest` by earlier fetches: file sha256s (SHA256SUMS, `sha256sum -c`
    format) or Hub commits (HUB_COMMITS, `length` 40)."""
    record = Path(dest) / record
    if not record.exists():
        return {}
    sums = {}
    for line_number, line in enumerate(record.read_text().splitlines(), 1):
        digest, _, name = line.partition("  ")
        if not is_hex(digest, length) or not name:
            raise InputError(f"{record}: line {line_number} is not '<{length} hex digits>  <name>'")
        sums[name] = digest
    return sums


def _write_record(dest, name, digest, record=CHECKSUM_RECORD):
    """Add (or replace) `name`'s digest in `dest`/`record`, atomically."""
    sums = read_checksum_record(dest, record, len(digest))
    sums[name] = digest
    with atomic_write(Path(dest) / record) as handle:
        handle.writelines(f"{d}  {entry}\n" for entry, d in sorted(sums.items()))


def _record_checksum(dest, relative, digest):
    """Record `relative`'s sha256 in `dest`/SHA256SUMS on its first fetch, saying it is unverified."""
    log.warning("%s: no published checksum; sha256 %s recorded in %s on first fetch (unverified: later fetches "
                "are checked against this record only)", Path(dest) / relative, digest, Path(dest) / CHECKSUM_RECORD)
    _write_record(dest, relative, digest)


def _hub_snapshot(snapshot, dest, hub_download):
    """Download a Hub dataset snapshot into `dest`/path; return its files (Hub metadata and our records of
    `dest` excluded). `hub_download` takes huggingface_hub.snapshot_download's keyword arguments."""
    if hub_download is None:
        from huggingface_hub import snapshot_download as hub_download
    local = dest / snapshot["path"]
    hub_download(repo_id=snapshot["repo"], repo_type=snapshot.get("repo_type", "dataset"),
                 revision=snapshot["revision"], allow_patterns=snapshot.get("allow_patterns"), local_dir=local)
    records = {dest / name for name in RECORDS}
    return sorted(p for p in local.rglob("*") if p.is_file() and ".cache" not in p.parts and p not in records)


def _hub_commit(snapshot, dest, hub_resolve) -> str:
    """The commit of a Hub snapshot to download: the manifest's pinned one, else the one recorded by the first
    fetch (HUB_COMMITS), else its branch resolved now on the Hub, said so and recorded."""
    repo, revision = snapshot["repo"], snapshot["revision"]
    if pinned(revision):
        log.info("%s: Hub commit %s pinned by the manifest (%s)", repo, revision, snapshot["revision_source"])
        return revision
    recorded = read_checksum_record(dest, HUB_RECORD, 40)
    if repo in recorded:
        log.info("%s: revision %r is not pinned in the manifest; using commit %s recorded by the first fetch",
                 repo, revision, recorded[repo])
        return recorded[repo]
    if hub_resolve is None:
        hub_resolve = _resolve_on_hub
    commit = hub_resolve(repo, revision, snapshot.get("repo_type", "dataset"))
    _write_record(dest, repo, commit, HUB_RECORD)
    log.warning("%s: revision %r is not pinned to a commit in the manifest: resolved to %s now and recorded in %s "
                "(later fetches use it)", repo, revision, commit, Path(dest) / HUB_RECORD)
    return commit


def _resolve_on_hub(repo: str, revision: str, repo_type: str) -> str:
    """The commit a Hub repository's `revision` (branch or tag) points at now."""
    from huggingface_hub import HfApi

    try:
        return HfApi().repo_info(repo, repo_type=repo_type, revision=revision).sha
    except Exception as error:  # huggingface_hub raises several types (offline, unknown repo or revision, HTTP)
        raise InputError(f"{repo}: cannot resolve revision {revision!r} on the Hugging Face Hub ({error})") from None


def _check_against_record(path, relative, recorded, dest) -> None:
    """Verify `path` against its recorded sha256, or record it (saying it is unverified) if there is none."""
    digest = file_digest(path)
    if relative not in recorded:
        _record_checksum(dest, relative, digest)
    elif recorded[relative] != digest:
        raise ChecksumMismatch(f"{path}: sha256 is {digest}, but {dest / CHECKSUM_RECORD} "
                               f"recorded {recorded[relative]} on first fetch")


def _say_how_verified(path, item, recorded_before: bool, dest) -> None:
    """Log how a fetched file was checked: against a published digest (naming its source) or against the sha256
    its first fetch recorded (a first fetch of a file nobody publishes a checksum for says so as it records it)."""
    published = [algorithm for algorithm in ("sha256", "md5") if item.get(algorithm)]
    if published:
        log.info("%s: verified: %s published by %s", path, " and ".join(published), item["checksum_source"])
    elif recorded_before:
        log.info("%s: matches the sha256 its first fetch recorded in %s (no published checksum)", path,
                 dest / CHECKSUM_RECORD)


def fetch(name, dest, opener=None, sources=None, retries=2, hub_download=None, hub_resolve=None,
          mirror: Mirror | None = None, backoff=None):
    """Acquire dataset `name` of the manifest into folder `dest` (from the internet, or from `mirror`, a
    `hypvl.acquire.mirror.Mirror`); return the fetched paths.

    Manual datasets return their expected files if all exist under `dest`, else raise
    ManualStepRequired with the instructions. Files without a published checksum get theirs
    computed and recorded on first fetch (said in a warning), and verified against the record afterwards;
    a Hub snapshot whose revision is not a commit is pinned to the commit it resolves to on the first fetch. One
    acquisition writes into `dest` at a time (`hypvl.acquire.lock`: a second waits). `retries` and `backoff` (seconds)
    as `download.fetch_file`'s. `hub_resolve(repo, revision, repo_type) -> commit` and `hub_download` stand in for the
    Hub in tests.
    """
    sources = load_sources() if sources is None else sources
    if name not in sources:
        raise InputError(f"unknown dataset {name!r}; the manifest lists {sorted(sources)}")
    entry, dest = sources[name], Path(dest)
    if entry.get("manual"):
        return _manual(name, entry, dest)
    if mirror is not None:  # every URL is then a file:// URL in the mirror
        opener, hub_download, hub_resolve = url_opener(("file",)), mirror.download, mirror.resolve
    with writing_into(dest):
        recorded = read_checksum_record(dest)
        paths = []
        for item in entry.get("files", []):
            relative = item["path"]
            path = dest / relative
            local = None if mirror is None else mirror.file(item["url"])
            digest = fetch_file(item["url"] if local is None else local.as_uri(), path,  # as_uri: "?" encoded
                                item["sha256"] or recorded.get(relative), item.get("md5"), opener, retries,
                                local=local, check=check_archive if item.get("unpack") else None, backoff=backoff)
            if not item["sha256"] and relative not in recorded:  # an md5 alone was verified: recorded without a word
                (_write_record if item.get("md5") else _record_checksum)(dest, relative, digest)
            _say_how_verified(path, item, relative in recorded, dest)
            if item.get("unpack"):
                unpack(path, dest / item.get("unpack_to", "."), item.get("unpack_max_bytes"),
                       item.get("unpack_strip_top", False), item.get("unpack_max_members"))
            paths.append(path)
        if "hf_snapshot" in entry:
            snapshot = {**entry["hf_snapshot"], "revision": _hub_commit(entry["hf_snapshot"], dest, hub_resolve)}
            files = _hub_snapshot(snapshot, dest, hub_download)
            for path in files:
                _check_against_record(path, str(path.relative_to(dest)), recorded, dest)
            paths += files
    return paths


def _manual(name, entry, dest):
    """The files a manual dataset's human step left under `dest`, verified where a digest is published;
    ManualStepRequired with the instructions where any is missing."""
    expected = expected_files(entry)
    missing = [item["path"] for item in expected if not (dest / item["path"]).exists()]
    if missing:
        raise ManualStepRequired(name, entry["instructions"].strip(), missing)
    for item in expected:
        path = dest / item["path"]
        if item.get("sha256") or item.get("md5"):
            verify(path, "the manual step", path, item.get("sha256"), item.get("md5"))
            _say_how_verified(path, item, False, dest)
        else:
            log.warning("%s: left by the manual step; no published checksum (unverified)", path)
    return [dest / item["path"] for item in expected]


def _run_fetch(args):
    """`hypvl acquire NAME --dest DIR`: fetch and print the fetched paths, or log the manual instructions and
    exit 2."""
    sources = load_sources(args.sources)
    if not args.list and not (args.name and args.dest):
        raise InputError("hypvl acquire: give a dataset NAME and --dest, or --list")
    if args.list:
        for name, entry in sources.items():
            print(f"{name}\t{trust(entry)}\t{entry.get('description', '')}")
        return 0
    try:
        paths = fetch(args.name, args.dest, sources=sources, mirror=Mirror.at(args.mirror))
    except ManualStepRequired as error:
        log.error("%s", error)
        return 2
    for path in paths:
        print(path)
    prepare = " ".join(sources[args.name].get("prepare", "").split())
    missing = [path for path in args.ready if not Path(path).exists()]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise InputError(f"{args.name}: fetched into {args.dest}, but the readers need {missing[0]}{more}; "
                         f"next step: {prepare or 'put it there'}; then run this again")
    if prepare and not args.ready:
        log.info("next step: %s", prepare)
    if args.out:
        write_json(Path(args.out), {"dataset": args.name, "dest": str(args.dest), "files": [str(p) for p in paths],
                                    "ready": list(args.ready)}, indent=1)
    return 0


def add_commands(subparsers):
    """Register `acquire`: fetch one dataset of the manifest (or `--list` them)."""
    add_fetch_command(subparsers, "acquire", SOURCES_PATH, "download a paper-scale dataset")


def add_fetch_command(subparsers, command: str, manifest, summary: str) -> None:
    """Register `command`: fetch one entry of `manifest` (the packaged default of `--sources`), or `--list` them. The
    workflow names no packaged manifest on the command line: its path moves with the checkout, and a job's changed
    parameters would fetch again."""
    parser = subparsers.add_parser(command, help=summary)
    parser.add_argument("name", nargs="?", help="entry name in the manifest")
    parser.add_argument("--dest", help="folder to fetch into")
    parser.add_argument("--sources", default=manifest, help=f"manifest (default: the package's {Path(manifest).name})")
    parser.add_argument("--list", action="store_true", help="list the manifest's entries")
    parser.add_argument("--mirror", help="fetch from this local mirror (a folder or file:// URL: each URL's file at "
                                         "<host>/<path>, Hub repositories in a Hub cache under hub/) instead of the "
                                         "internet")
    parser.add_argument("--ready", nargs="+", default=[], metavar="PATH",
                        help="paths the readers need once fetched (one missing: the dataset's prepare step is due)")
    parser.add_argument("--out", help="JSON written once the fetch is done and every --ready path exists")
    parser.set_defaults(func=_run_fetch)
