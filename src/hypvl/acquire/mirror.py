"""A local mirror of what acquisition downloads, for machines without the internet (clusters whose nodes have no
outside access, labs keeping datasets on shared storage, the pilot).

A mirror is a folder, or a `file://` URL of one, holding
- every HTTPS file at `<host>/<path>` (with `?<query>` kept in the name where the URL has one), as
  `wget --force-directories` saves it: `https://images.cocodataset.org/zips/val2017.zip` is
  `<mirror>/images.cocodataset.org/zips/val2017.zip`;
- every Hugging Face Hub repository in a Hub cache under `<mirror>/hub`, the layout `HF_HUB_CACHE` has
  (`datasets--<org>--<name>/refs/<branch>` holding a commit, `snapshots/<commit>/<files>`), read with
  huggingface_hub itself (`snapshot_download(local_files_only=True)`).
`hypvl acquire --mirror` fetches from it through the same code as from the internet: published checksums are
verified, unpublished ones recorded on the first fetch, Hub branches pinned to the commit the mirror's refs name.
A symlink in the mirror is followed from its own folder (as the Hub cache's snapshots link to its blobs) and only
within the mirror: one leading out of it (to a private file elsewhere, say) is refused, naming both.
"""

from pathlib import Path
from urllib.parse import unquote, urlsplit

from hypvl.errors import InputError
from hypvl.io import atomic_write, link_or_copy

from hypvl.data.formats.common import escapes_root
from .manifest import pinned

HUB = "hub"


class Mirror:
    """The mirror at `root` (a folder): where each URL's file and each Hub repository lies in it."""

    def __init__(self, root):
        self.root = Path(root)

    @classmethod
    def at(cls, location) -> "Mirror | None":
        """The mirror a config or command line names (a folder or a `file://` URL), None for none."""
        if location is None or location == "":
            return None
        text = str(location)
        if "://" in text:
            parts = urlsplit(text)
            if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
                raise InputError(f"mirror {text!r}: a folder or a file:// URL (other schemes are not mirrors)")
            text = unquote(parts.path)
        root = Path(text)
        if not root.is_dir():
            raise InputError(f"mirror {root}: no such folder")
        return cls(root)

    def relative(self, url: str) -> str:
        """The path of `url`'s copy inside the mirror (`<host>/<path>[?<query>]`)."""
        parts = urlsplit(url)
        relative = parts.netloc + parts.path + (f"?{parts.query}" if parts.query else "")
        if not parts.netloc or escapes_root(relative):
            raise InputError(f"{url}: cannot be mirrored (no host, or a path leaving the mirror)")
        return relative

    def path(self, url: str) -> Path:
        """Where the copy of `url` lies (or is written) in the mirror."""
        return self.root / self.relative(url)

    def file(self, url: str) -> Path:
        """The file holding `url`'s copy, symlinks resolved (`inside`); InputError naming both when the mirror lacks
        it."""
        path = self.path(url)
        real = self.inside(path)
        if not real.is_file():
            raise InputError(f"{url}: not in the mirror {self.root} (expected {path})")
        return real

    def inside(self, path: Path) -> Path:
        """`path` in the mirror with its symlinks resolved, each from its own folder; InputError naming both where
        they lead out of the mirror."""
        root, real = self.root.resolve(), Path(path).resolve()
        if real != root and root not in real.parents:
            raise InputError(f"{path}: a symlink in the mirror {self.root} leads out of it (to {real}): refused (a "
                             "mirror serves only what lies inside it)")
        return real

    @property
    def hub(self) -> Path:
        """The Hugging Face Hub cache of the mirror."""
        return self.root / HUB

    def resolve(self, repo: str, revision: str, repo_type: str) -> str:
        """The commit the mirror's copy of Hub repository `repo` holds for branch or tag `revision` (as
        acquisition's `hub_resolve`)."""
        from huggingface_hub.file_download import repo_folder_name

        ref = self.hub / repo_folder_name(repo_id=repo, repo_type=repo_type) / "refs" / revision
        if not self.inside(ref).is_file():
            raise InputError(f"{repo}: the mirror {self.root} has no {repo_type} repository at revision {revision!r} "
                             f"(expected {ref})")
        commit = ref.read_text().strip()
        if not pinned(commit):
            raise InputError(f"{ref}: holds no commit (40 hex digits): not a Hub cache's ref")
        return commit

    def download(self, *, repo_id: str, repo_type: str, revision: str, allow_patterns, local_dir) -> None:
        """Link (or copy: `link_or_copy`) the files of Hub repository `repo_id` at `revision` that `allow_patterns`
        select from the mirror into `local_dir` (as acquisition's `hub_download`, snapshot_download's arguments)."""
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError
        from huggingface_hub.utils import filter_repo_objects

        try:
            snapshot = Path(snapshot_download(repo_id, repo_type=repo_type, revision=revision, cache_dir=self.hub,
                                              local_files_only=True))
        except LocalEntryNotFoundError:
            raise InputError(f"{repo_id}: the mirror {self.root} has no snapshot of commit {revision}") from None
        files = sorted(path.relative_to(snapshot).as_posix() for path in snapshot.rglob("*") if path.is_file())
        chosen = list(filter_repo_objects(files, allow_patterns=allow_patterns))
        if not chosen:
            raise InputError(f"{repo_id}: the mirror's snapshot {snapshot} holds no file matching {allow_patterns}")
        for relative in chosen:
            target = Path(local_dir) / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            link_or_copy(self.inside(snapshot / relative), target)  # the cache's blob, not its symlink

    def hub_snapshot(self, repo: str, repo_type: str, commit: str, branch: str | None = None) -> Path:
        """The folder a mirror writer puts the files of `repo` at `commit` in (its `branch` ref pointing there)."""
        from huggingface_hub.file_download import repo_folder_name

        folder = self.hub / repo_folder_name(repo_id=repo, repo_type=repo_type)
        if branch is not None:
            with atomic_write(folder / "refs" / branch) as handle:  # replaced, never written through a link
                handle.write(commit)
        return folder / "snapshots" / commit
