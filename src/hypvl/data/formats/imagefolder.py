"""Image-folder classification sets: ``<root>/<split>/<class dir>/<image>``.

Class indices follow the sorted class-directory names, as torchvision's ImageFolder does (so
ImageNet's WordNet-id folders map to the catalog's class order); folders named by their label index, as the
manifest's prepare steps materialise a TFDS split (`<label index>/<file>`), are sorted by number (`10` after `9`). An optional ``<root>/classnames.txt``
gives one class name per line in that order; otherwise names come from the dataset catalog.

Sorted by class, a folder keeps no record order of the split it was made from, unless every image is named
by its record number (``<split>/<class>/<record>.png``, numbers distinct across classes, as a TFDS split
materialised in its order would be): `in_record_order` restores that order.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from hypvl.errors import InputError

from .images import decode_image

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp", ".bmp"}


@dataclass
class ImageFolderSet:
    """A split of an image-folder dataset."""

    root: Path
    split: str
    class_dirs: list[str]
    class_names: list[str] | None
    samples: list[tuple[Path, int]]


def class_order(names) -> list[str]:
    """Class-folder names in label order: by number where every name is a label index, else by name."""
    names = list(names)
    numbered = all(name.isdecimal() for name in names)
    return sorted(names, key=lambda name: (int(name), name) if numbered else (0, name))


def read_imagefolder(root: Path, split: str) -> ImageFolderSet:
    """List the images of `split` under `root` with their labels; checks the layout, not the pixels."""
    root = Path(root)
    split_dir = root / split
    if not split_dir.is_dir():
        raise InputError(f"{split_dir}: split folder not found (expected <root>/{split}/<class>/<image>)")
    strays = sorted(p.name for p in split_dir.iterdir() if not p.is_dir() and not p.name.startswith("."))
    if strays:
        raise InputError(f"{split_dir}: holds files where class folders belong: {strays[:5]}")
    class_dirs = class_order(p.name for p in split_dir.iterdir() if p.is_dir())
    if not class_dirs:
        raise InputError(f"{split_dir}: no class folders")
    samples = []
    for label, name in enumerate(class_dirs):
        files = sorted(p for p in (split_dir / name).iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if not files:
            raise InputError(f"{split_dir / name}: class folder holds no images")
        samples.extend((f, label) for f in files)
    names_file = root / "classnames.txt"
    class_names = None
    if names_file.is_file():
        class_names = [line.strip() for line in names_file.read_text().splitlines() if line.strip()]
        if len(class_names) != len(class_dirs):
            raise InputError(f"{names_file}: {len(class_names)} class names for {len(class_dirs)} class folders")
    return ImageFolderSet(root, split, class_dirs, class_names, samples)


def iter_imagefolder(split_dir: Path, check_images: bool = True) -> Iterator[tuple[Path, int]]:
    """(image path, label) of the split folder ``<root>/<split>``; each image is decoded when `check_images`."""
    split_dir = Path(split_dir)
    for path, label in read_imagefolder(split_dir.parent, split_dir.name).samples:
        if check_images:
            load_image(path)
        yield path, label


def in_record_order(samples: list[tuple[Path, int]]) -> list[tuple[Path, int]] | None:
    """`samples` of a split in its record order when every image is named by its record number (distinct
    numbers); None when they are not (the folder then keeps no record order)."""
    stems = [path.stem for path, _ in samples]
    if not all(stem.isdigit() for stem in stems) or len({int(stem) for stem in stems}) < len(stems):
        return None
    return sorted(samples, key=lambda sample: int(sample[0].stem))


def write_imagefolder(root: Path, split: str, class_names: list[str],
                      items: list[tuple[int, Image.Image]], record_names: bool = False) -> None:
    """Write `items` (label, image) as PNGs under ``<root>/<split>/<label:04d>/`` plus classnames.txt, each
    named by its index within its class, or with `record_names` by its index in `items` (its record number)."""
    root = Path(root)
    counts: dict[int, int] = {}
    for record, (label, image) in enumerate(items):
        folder = root / split / f"{label:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        index = counts.get(label, 0)
        counts[label] = index + 1
        image.save(folder / (f"{record:06d}.png" if record_names else f"{index:05d}.png"))
    (root / "classnames.txt").write_text("".join(f"{name}\n" for name in class_names))


def load_image(path: Path) -> Image.Image:
    """Open an image file as RGB, naming the file if it does not decode."""
    if not Path(path).is_file():
        raise InputError(f"{path}: image file not found")
    return decode_image(Path(path).read_bytes(), str(path))
