"""What a pilot-world writer works with: the sizes, the mirror, the dataset folders, and the digests of what it
served."""

import gzip as gzip_module
import hashlib
import io
import tarfile
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from PIL import Image

from hypvl.acquire.mirror import Mirror
from hypvl.worlds.smoke.settings import WorldSettings
from hypvl.errors import InputError
from hypvl.io import atomic_write


@dataclass(frozen=True)
class PilotSettings:
    """Sizes of the pilot world (config `pilot_world`): per classification set, the classes given images (the
    evaluation's `eval.max_classes`) and the images of each; per training corpus, its samples; and the side of a
    drawn picture. Evaluation sets beyond classification take the smoke world's drawing at these sizes (HierarCaps'
    test and train rows: `retrieval_images` each; `scene_items` per VL-CheckList corpus file and per ARO attribute
    pair)."""

    seed: int = 0
    classes: int = 4
    images_per_class: int = 2
    image_size: int = 256
    grit_samples: int = 48
    redcaps_samples: int = 48
    cc3m_samples: int = 48
    yfcc15m_samples: int = 48
    retrieval_images: int = 8
    scene_items: int = 2
    shard_size: int = 32

    def world(self) -> WorldSettings:
        """The smoke world's settings drawing this world's corpora and evaluation sets."""
        return WorldSettings(seed=self.seed, image_size=self.image_size, grit_samples=self.grit_samples,
                             redcaps_samples=self.redcaps_samples, cc3m_samples=self.cc3m_samples,
                             yfcc15m_samples=self.yfcc15m_samples, retrieval_images=self.retrieval_images,
                             hierarcaps_test=self.retrieval_images, hierarcaps_train=self.retrieval_images,
                             vlchecklist_per_group=self.scene_items, vg_attribution_per_pair=self.scene_items,
                             shard_size=self.shard_size)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class PilotWorld:
    """Where the pilot world writes: the mirror (what the internet serves), each dataset's folder under `data_dir`
    (config `acquire`: where a human's manual or prepare step leaves its files; both in the staging folder that
    `install` moves into place), and the real manifest's entries.
    `served` records the sha256 and md5 of every file served or left, by URL or `<dataset>:<path>`."""

    settings: PilotSettings
    data_dir: Path
    mirror: Mirror
    folders: dict[str, str]
    sources: dict
    served: dict[str, dict[str, str]] = field(default_factory=dict)

    def entry(self, dataset: str) -> dict:
        if dataset not in self.sources:
            raise InputError(f"the acquisition manifest has no dataset {dataset!r}")
        return self.sources[dataset]

    def dest(self, dataset: str) -> Path:
        """The folder acquisition fetches `dataset` into (config `acquire`)."""
        if dataset not in self.folders:
            raise InputError(f"config: acquire names no folder for dataset {dataset!r}")
        return self.data_dir / self.folders[dataset]

    def _record(self, name: str, data: bytes) -> None:
        self.served[name] = {"sha256": hashlib.sha256(data).hexdigest(), "md5": hashlib.md5(data).hexdigest()}

    def serve(self, url: str, data: bytes) -> None:
        """Put `data` in the mirror as the file behind `url`."""
        with atomic_write(self.mirror.path(url), mode="wb") as handle:
            handle.write(data)
        self._record(url, data)

    def leave(self, dataset: str, relative: str, data: bytes) -> None:
        """Write `data` at `relative` in `dataset`'s folder, as a manual step leaves a file there."""
        with atomic_write(self.dest(dataset) / relative, mode="wb") as handle:
            handle.write(data)
        self._record(f"{dataset}:{relative}", data)

    def hub_folder(self, dataset: str) -> Path:
        """The mirror folder holding the files of `dataset`'s Hub snapshot at the revision its manifest entry names
        (a branch: a commit made up for the pilot, which the branch's ref names)."""
        snapshot = self.entry(dataset)["hf_snapshot"]
        revision, repo = snapshot["revision"], snapshot["repo"]
        pinned = len(revision) == 40 and all(c in "0123456789abcdef" for c in revision)
        commit = revision if pinned else hashlib.sha1(f"hypvl pilot {repo} {revision}".encode()).hexdigest()
        return self.mirror.hub_snapshot(repo, snapshot.get("repo_type", "dataset"), commit,
                                        None if pinned else revision)


def image_bytes(image: Image.Image, fmt: str) -> bytes:
    """`image` encoded as `fmt` (JPEG at quality 90, as most web images; PNG; WEBP as CLIP_benchmark stores)."""
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **({"quality": 90} if fmt in ("JPEG", "WEBP") else {}))
    return buffer.getvalue()


def zip_bytes(files: dict[str, bytes]) -> bytes:
    """A zip archive of `files` (name -> content), in name order."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            archive.writestr(zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0)), files[name])
    return buffer.getvalue()


def tar_bytes(files: dict[str, bytes], gzip: bool = False) -> bytes:
    """A tar (`gzip`: .tar.gz) archive of `files` (name -> content), in name order."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, 1577836800
            archive.addfile(info, io.BytesIO(files[name]))
    return gzip_module.compress(buffer.getvalue(), mtime=0) if gzip else buffer.getvalue()
