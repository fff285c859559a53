"""A grounded shard's decoded twin: its records with every image already decoded, for fast reading.

Reading a grounded shard costs a tar parse (9 members a sample), a JPEG decode per image and the record checks;
a smoke training job spent about 6 s of its 15-30 s on that one first pass. `hypvl ground` (config
`grounding.decoded_twins`, on at smoke scale) therefore writes beside each shard `<shard stem>.decoded.npy`,
every image's RGB pixels (uint8) one after the other, and `<shard stem>.decoded.json`: the shard's size and
modification time, and per record its key, texts, parse, subreddit and the (offset, height, width) of its images
in the .npy, or the decode error of an image that does not decode. The training stream memory-maps the pixels
(no copy per job; every job on the machine shares the page cache) and uses a twin only while the shard's size and
time still match; otherwise it reads the shard. The images are the pixels PIL decodes from the shard, so
the batches are bitwise those of reading the shard. Written by hand: no kept library stores decoded images
beside a webdataset shard (webdataset's caches hold the encoded bytes).
"""

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from hypvl.errors import InputError
from hypvl.io import atomic_write, write_json

from .grounded import GroundedRecord, iter_grounded
from .images import CorruptImage, decode_image

PIXELS, INDEX = ".decoded.npy", ".decoded.json"
VERSION = 2  # 2: each record's captions


def twin_paths(shard: Path) -> tuple[Path, Path]:
    """The twin's pixel and index files beside `shard` (`x.tar` -> `x.decoded.npy`, `x.decoded.json`)."""
    return shard.with_suffix(PIXELS), shard.with_suffix(INDEX)


@dataclass
class DecodedImage:
    """An image of a twin: (offset, height, width) into the pixels, or the message of its decode error."""

    pixels: np.ndarray | None
    error: str | None = None

    def get(self) -> Image.Image:
        """The RGB image; CorruptImage (with the shard's message) where it did not decode."""
        if self.error is not None:
            raise CorruptImage(self.error)
        return Image.fromarray(self.pixels)


def write_twin(shard: Path) -> tuple[Path, Path]:
    """Decode every image of grounded `shard` and write its twin atomically (pixels first, index last)."""
    shard = Path(shard)
    stat = shard.stat()
    arrays, records, offset = [], [], 0
    for record in iter_grounded(shard):
        images = []
        for data, where in _images(record):
            try:
                array = np.asarray(decode_image(data, where), dtype=np.uint8)
            except CorruptImage as exc:
                images.append({"error": str(exc)})
                continue
            arrays.append(array.reshape(-1))
            images.append({"at": [offset, *array.shape[:2]]})
            offset += array.size
        records.append({"key": record.key, "caption": record.caption, "phrases": [p for _, p in record.boxes],
                        "parse": record.parse, "subreddit": record.subreddit, "captions": record.captions,
                        "images": images})
    pixels_path, index_path = twin_paths(shard)
    with atomic_write(pixels_path, mode="wb") as handle:
        np.save(handle, np.concatenate(arrays) if arrays else np.zeros(0, np.uint8))
    index = {"version": VERSION, "shard_size": stat.st_size, "shard_mtime_ns": stat.st_mtime_ns,
             "pixels": offset, "records": records}
    write_json(index_path, index)
    return pixels_path, index_path


def _images(record: GroundedRecord):
    """(bytes, where) of a record's images: the whole image, then each box crop."""
    yield record.image, record.where()
    for i, (crop, _) in enumerate(record.boxes):
        yield crop, record.where(f"parent{i:03d}.jpg")


def read_twin(shard: Path) -> list[tuple[GroundedRecord, list[DecodedImage]]] | None:
    """The records of `shard` (image bytes left empty) with their decoded images, from its twin; None where the
    shard has no twin or has changed since (size or time). A twin that does not read is an InputError."""
    shard = Path(shard)
    pixels_path, index_path = twin_paths(shard)
    if not index_path.is_file():
        return None
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
        stat = shard.stat()
        if (index.get("version"), index.get("shard_size"), index.get("shard_mtime_ns")) != (
                VERSION, stat.st_size, stat.st_mtime_ns):
            return None
        pixels = np.load(pixels_path, mmap_mode="r")
        if pixels.shape != (index["pixels"],):
            raise ValueError(f"{pixels_path.name} holds {pixels.size} bytes of pixels, the index says {index['pixels']}")
        out = []
        for entry in index["records"]:
            images = [DecodedImage(None, image["error"]) if "error" in image else
                      DecodedImage(pixels[image["at"][0]:image["at"][0] + image["at"][1] * image["at"][2] * 3]
                                   .reshape(image["at"][1], image["at"][2], 3)) for image in entry["images"]]
            boxes = [(b"", phrase) for phrase in entry["phrases"]]
            out.append((GroundedRecord(entry["key"], b"", entry["caption"], boxes, str(shard), entry["parse"],
                                       entry["subreddit"], entry["captions"]), images))
        return out
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise InputError(f"{index_path}: unreadable decoded twin of {shard.name} ({exc}); delete it, or ground the "
                         "corpus again") from None
