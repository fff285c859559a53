"""CLIP_benchmark's webdataset layout for zero-shot classification (`build_wds_dataset`).

```
<root>/classnames.txt                         one class name per line, in label order
<root>/zeroshot_classification_templates.txt  one prompt per line, with the placeholder `{c}`
<root>/<split>/nshards.txt                    the shard count N
<root>/<split>/0.tar ... <N-1>.tar             samples: `<key>.cls` (label as text) + `<key>.webp|png|jpg|jpeg`
```
A shard missing from, or beyond, the announced count is an error (never a split read short). Records are in shard
order; `index_clip_benchmark_split` keeps where each image lies in its shard, not its bytes, so that a split of
tens of thousands of images is read image by image.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hypvl.io import atomic_write

from .common import Where, read_text
from .shards import IMAGE_EXTENSIONS, MemberSpan, image_member, iter_tar_samples, text_member, write_tar_samples

CLASSNAMES = "classnames.txt"
TEMPLATES = "zeroshot_classification_templates.txt"
NSHARDS = "nshards.txt"


@dataclass(frozen=True)
class LabelledImage:
    """One test image (encoded bytes) with its integer class label."""

    key: str
    image: bytes
    label: int


@dataclass(frozen=True)
class ClipBenchmarkDataset:
    """Class names, prompt templates (`{c}` placeholder) and the samples of one split."""

    classnames: tuple[str, ...]
    templates: tuple[str, ...]
    samples: tuple[LabelledImage, ...]


@dataclass(frozen=True)
class IndexedImage:
    """One test image of a split, left in its shard (`image.read()` gives its bytes), with its class label."""

    key: str
    image: MemberSpan
    label: int


def _lines(path: Path, what: str) -> tuple[str, ...]:
    """Non-blank stripped lines of a text file; an empty list is an error."""
    lines = tuple(line.strip() for line in read_text(path).splitlines() if line.strip())
    if not lines:
        raise Where(path).error(f"no {what}")
    return lines


def read_classnames(root: Path) -> tuple[str, ...]:
    """The class names of `root/classnames.txt`, in label order."""
    return _lines(Path(root) / CLASSNAMES, "class names")


def read_templates(root: Path) -> tuple[str, ...]:
    """The prompt templates of `root/zeroshot_classification_templates.txt`; each must hold `{c}`."""
    path = Path(root) / TEMPLATES
    templates = _lines(path, "templates")
    for number, template in enumerate(templates, start=1):
        if "{c}" not in template:
            raise Where(path, f"template {number}").error(f"'{template}' lacks the placeholder {{c}}")
    return templates


def split_shards(root: Path, split: str) -> list[Path]:
    """The shard files `0.tar ... N-1.tar` that `root/<split>/nshards.txt` announces, all there and no more."""
    folder = Path(root) / split
    count_file = folder / NSHARDS
    text = read_text(count_file).strip()
    if not text.isdigit() or len(text) > 18 or int(text) < 1:
        raise Where(count_file).error(f"should hold a positive shard count, got '{text[:40]}'")
    present = set(folder.glob("*.tar"))
    # the count is checked against the shards present before it sizes anything: a count of 10^11 names a missing
    # shard among the first len(present) + 1, never 10^11 paths
    for index in range(min(int(text), len(present) + 1)):
        if folder / f"{index}.tar" not in present or not (folder / f"{index}.tar").is_file():
            raise Where(count_file).error(f"announces {text} shards but {folder / f'{index}.tar'} is missing")
    shards = [folder / f"{index}.tar" for index in range(int(text))]
    unannounced = sorted(present - set(shards), key=lambda path: (len(path.name), path.name))
    if unannounced:
        raise Where(count_file).error(f"announces {text} shards but the folder also holds "
                                      f"{[path.name for path in unannounced]}: fix the count or remove them")
    return shards


def index_clip_benchmark_split(root: Path, split: str = "test", num_classes: int | None = None) -> list[IndexedImage]:
    """Every record of `root/<split>` in shard order, its image left in the shard; labels are checked to lie in
    [0, num_classes) (default: len(classnames)), and every shard is read to its end."""
    if num_classes is None:
        num_classes = len(read_classnames(root))
    records = []
    for shard in split_shards(root, split):
        for key, where, members in iter_tar_samples(shard, defer=IMAGE_EXTENSIONS):
            text = text_member(members, "cls", where).strip()
            if not text.lstrip("-").isdigit():
                raise where.error(f"'.cls' should hold an integer label, got '{text}'")
            label = int(text)
            if not 0 <= label < num_classes:
                raise where.error(f"label {label} outside [0, {num_classes})")
            records.append(IndexedImage(key, image_member(members, where), label))
    return records


def read_clip_benchmark_wds(root: Path, split: str = "test") -> ClipBenchmarkDataset:
    """Class names, templates and every sample of `root/<split>`, images read."""
    classnames = read_classnames(root)
    samples = tuple(LabelledImage(record.key, record.image.read(), record.label)
                    for record in index_clip_benchmark_split(root, split, len(classnames)))
    return ClipBenchmarkDataset(classnames, read_templates(root), samples)


def write_clip_benchmark_wds(
    root: Path,
    dataset: ClipBenchmarkDataset,
    split: str = "test",
    samples_per_shard: int = 1000,
    image_extension: str = "jpg",
) -> None:
    """Write `dataset` in the layout above, `samples_per_shard` samples per shard."""
    root = Path(root)
    for name, lines in ((CLASSNAMES, dataset.classnames), (TEMPLATES, dataset.templates)):
        with atomic_write(root / name, mode="w", encoding="utf-8") as handle:
            handle.write("".join(f"{line}\n" for line in lines))
    samples = dataset.samples
    chunks: Sequence = [samples[i : i + samples_per_shard] for i in range(0, len(samples), samples_per_shard)]
    for index, chunk in enumerate(chunks or [()]):
        write_tar_samples(
            root / split / f"{index}.tar",
            ((s.key, {"cls": str(s.label).encode(), image_extension: s.image}) for s in chunk),
        )
    with atomic_write(root / split / NSHARDS, mode="w") as handle:
        handle.write(f"{max(len(chunks), 1)}\n")
