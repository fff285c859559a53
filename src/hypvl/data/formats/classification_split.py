"""A classification split in either of its on-disk layouts, told apart on disk: CLIP_benchmark's webdataset
(catalog layout `clip_benchmark_wds`: `<split>/nshards.txt` and shards, `classnames.txt` beside; records in shard
order) or an image folder (`imagefolder`: `<split>/<class>/<image>`; records sorted by class, or in record order
where every image is named by its record number, `imagefolder.in_record_order`).

Every reader of a classification split (zero-shot, the linear probe's test split, hierarchical metrics, BREEDS,
`hypvl probe-splits`) reads it here. The split is indexed, not loaded: `load(i)` decodes image i when it is
needed (a webdataset image is read from its place in its shard), so a split of tens of thousands of images is
decoded batch by batch (`hypvl.evaluate.features`).
"""

from dataclasses import dataclass, replace
from pathlib import Path

from PIL import Image

from hypvl.errors import InputError

from . import clip_benchmark_wds, imagefolder
from .images import decode_image
from .shards import MemberSpan


@dataclass(frozen=True)
class ClassificationSplit:
    """The records of `folder` (`<root>/<split>`) in `layout`: labels in record order, the class names of
    `<root>/classnames.txt` (None where an image folder has none), the class-folder names of an image folder in label
    order (None for a webdataset), the class count, and whether the records are in the source's order."""

    folder: Path
    layout: str
    labels: tuple[int, ...]
    class_names: tuple[str, ...] | None
    class_dirs: tuple[str, ...] | None
    num_classes: int
    ordered: bool
    images: tuple[Path | MemberSpan, ...]

    def __len__(self) -> int:
        return len(self.labels)

    def first_classes(self, count: int | None) -> "ClassificationSplit":
        """The split restricted to the records of its first `count` classes by label (itself where `count` is None or
        not below its class count): what an evaluation capped at `count` classes reads (config `eval.max_classes`)."""
        if count is None or count >= self.num_classes:
            return self
        kept = [index for index, label in enumerate(self.labels) if label < count]
        return replace(self, labels=tuple(self.labels[i] for i in kept), images=tuple(self.images[i] for i in kept),
                       class_names=None if self.class_names is None else self.class_names[:count],
                       class_dirs=None if self.class_dirs is None else self.class_dirs[:count], num_classes=count)

    def load(self, index: int) -> Image.Image:
        """Image `index`, decoded to RGB; one that does not decode is an error naming its file (and record)."""
        image = self.images[index]
        if isinstance(image, MemberSpan):
            return decode_image(image.read(), f"{image.where.file}: record {image.where.record}")
        return imagefolder.load_image(image)


def expected_layouts(split: str) -> str:
    """The two layouts a classification split may take, in words, for error messages."""
    return (f"CLIP_benchmark's webdataset, {split}/{clip_benchmark_wds.NSHARDS} and shards with "
            f"{clip_benchmark_wds.CLASSNAMES} beside, or an image folder {split}/<class>/<image>")


def read_classification_split(root: Path, split: str) -> ClassificationSplit:
    """Index split `split` of the classification set at `root`, in whichever layout it is on disk."""
    root = Path(root)
    folder = root / split
    if (folder / clip_benchmark_wds.NSHARDS).is_file():
        names = clip_benchmark_wds.read_classnames(root)
        records = clip_benchmark_wds.index_clip_benchmark_split(root, split, len(names))
        if not records:
            raise InputError(f"{folder}: its shards hold no records")
        return ClassificationSplit(folder, "clip_benchmark_wds", tuple(r.label for r in records), names, None,
                                   len(names), True, tuple(r.image for r in records))
    if not folder.is_dir():
        raise InputError(f"{folder}: split folder not found (expected {expected_layouts(split)})")
    if not any(path.is_dir() for path in folder.iterdir()):
        raise InputError(f"{folder}: neither layout of a classification split (expected {expected_layouts(split)})")
    dataset = imagefolder.read_imagefolder(root, split)
    ordered = imagefolder.in_record_order(dataset.samples)
    samples = ordered or dataset.samples
    names = None if dataset.class_names is None else tuple(dataset.class_names)
    return ClassificationSplit(folder, "imagefolder", tuple(label for _, label in samples), names,
                               tuple(dataset.class_dirs), len(dataset.class_dirs), ordered is not None,
                               tuple(path for path, _ in samples))
