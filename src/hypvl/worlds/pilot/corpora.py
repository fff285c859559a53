"""The pilot world's raw training corpora, as acquisition and the manifest's `prepare` step leave them (samples drawn
as the smoke world draws them, at the pilot's sizes):

- GRIT: the Hub metadata (`zzliang/GRIT`, `grit-20m/*.parquet`: key, clip similarities, id, url, caption, width,
  height, noun_chunks, ref_exps) served, and img2dataset's webdataset output of it in `images/` (`NNNNN.tar` with
  `<key>.jpg`, `.txt` and `.json` holding the metadata and img2dataset's own fields, `NNNNN.parquet`,
  `NNNNN_stats.json`);
- RedCaps: the annotations zip (`annotations/<subreddit>_<year>.json`) served, and the TARs the redcaps-downloader
  leaves (`<key>.jpg` + `<key>.json` with caption and subreddit, MERU's layout) at the folder's top;
- CC3M: the training and validation TSVs (`caption<TAB>url`, no header) served, and img2dataset's webdataset output of
  the training TSV in `images/`, which holds the HierarCaps training rows' pictures too (HierarCaps finds them in
  CC3M by their captions);
- YFCC15M: CLIP's subset list (`yfcc100m_subset_data.tsv.bz2`) served, and what its prepare step leaves: the list
  unpacked, the YFCC100M metadata of its photos (`yfcc100m_dataset`) and the photos under `images/<hash>` paths.
"""

import bz2
import io
import json
import tempfile
from pathlib import Path

from hypvl.data.formats.shards import json_bytes, write_tar_samples
from hypvl.data.formats.yfcc import SUBSET
from hypvl.worlds.smoke.corpora import CorpusItem, corpus_item, grit_sample, write_corpus
from hypvl.worlds.smoke.hierarcaps_sets import train_pictures
from hypvl.errors import require
from hypvl.io import atomic_write, write_json

from .world import PilotWorld, zip_bytes

IMG2DATASET_FOLDER = "images"  # the manifest's `--output_folder images`


def _parquet(rows: list[dict]) -> bytes:
    """`rows` as a parquet table (what img2dataset and the GRIT release store metadata in)."""
    import pandas

    require("pyarrow", "pilot")  # pandas' parquet writer

    buffer = io.BytesIO()
    pandas.DataFrame(rows).to_parquet(buffer, index=False)
    return buffer.getvalue()


def _items(world: PilotWorld, corpus: str, count: int) -> list[CorpusItem]:
    return [corpus_item(world.settings.world(), corpus, index) for index in range(count)]


def write_img2dataset(folder: Path, rows: list[dict], images: list[bytes], shard_size: int) -> list[Path]:
    """img2dataset's webdataset output of `rows` (each with `url` and `caption`, the additional columns kept) and
    their downloaded `images`: shards of `shard_size` samples keyed by a 9-digit sample number; returns the shards."""
    shards = []
    for shard, start in enumerate(range(0, len(rows), shard_size)):
        samples, metadata = [], []
        for number in range(start, min(start + shard_size, len(rows))):
            key = f"{number:09d}"
            meta = {**rows[number], "key": key, "status": "success", "error_message": None, "width": None,
                    "height": None, "original_width": None, "original_height": None, "exif": "{}"}
            samples.append((key, {"jpg": images[number], "txt": rows[number]["caption"].encode(),
                                  "json": json_bytes(meta)}))
            metadata.append({k: (json.dumps(v) if isinstance(v, list) else v) for k, v in meta.items()})
        path = folder / f"{shard:05d}.tar"
        write_tar_samples(path, samples)
        with atomic_write(folder / f"{shard:05d}.parquet", mode="wb") as handle:
            handle.write(_parquet(metadata))
        write_json(folder / f"{shard:05d}_stats.json", {"count": len(samples), "successes": len(samples),
                                                        "failed_to_download": 0, "failed_to_resize": 0,
                                                        "status_dict": {"success": len(samples)}}, indent=1)
        shards.append(path)
    return shards


def write_grit(world: PilotWorld) -> list[Path]:
    """GRIT's Hub metadata in the mirror and img2dataset's output of it in the grit folder; returns the shards."""
    size = world.settings.image_size
    samples = [grit_sample(item, size) for item in _items(world, "grit", world.settings.grit_samples)]
    rows = [{"key": f"{index:09d}", "clip_similarity_vitb32": 0.3, "clip_similarity_vitl14": 0.3,
             "id": 1_000_000 + index, "url": f"https://pilot.invalid/grit/{sample.key}.jpg", "caption": sample.caption,
             "width": size, "height": size, "noun_chunks": [list(span) for span in sample.noun_chunks],
             "ref_exps": [list(span) for span in sample.ref_exps]} for index, sample in enumerate(samples)]
    folder = world.hub_folder("grit") / "grit-20m"
    folder.mkdir(parents=True, exist_ok=True)
    table = [{**row, "noun_chunks": json.dumps(row["noun_chunks"]), "ref_exps": json.dumps(row["ref_exps"])}
             for row in rows]
    (folder / "coyo_0_snappy.parquet").write_bytes(_parquet(table))
    return write_img2dataset(world.dest("grit") / IMG2DATASET_FOLDER, rows, [s.image for s in samples],
                             world.settings.shard_size)


def write_redcaps(world: PilotWorld) -> list[Path]:
    """RedCaps' annotations zip in the mirror and the downloader's TARs in the redcaps folder; returns the shards."""
    items = _items(world, "redcaps", world.settings.redcaps_samples)
    annotations: dict[str, list[dict]] = {}
    for index, item in enumerate(items):
        annotations.setdefault(item.subreddit, []).append({
            "image_id": item.key, "author": "pilot", "url": f"https://i.redd.it/{item.key}.jpg",
            "raw_caption": item.caption, "caption": item.caption.lower(), "subreddit": item.subreddit,
            "score": 10, "created_utc": 1577836800 + index, "permalink": f"/r/{item.subreddit}/comments/{item.key}/",
            "crosspost_parents": None})
    files = {f"annotations/{subreddit}_2020.json": json.dumps(
        {"info": {"subreddit": subreddit, "year": 2020}, "annotations": posts}).encode()
        for subreddit, posts in annotations.items()}
    world.serve(world.entry("redcaps")["files"][0]["url"], zip_bytes(files))
    shards, size = [], world.settings.shard_size
    for shard, start in enumerate(range(0, len(items), size)):
        path = world.dest("redcaps") / f"{shard:05d}.tar"
        write_tar_samples(path, ((item.key, {"jpg": item.image, "json": json_bytes(
            {"image_id": item.key, "caption": item.caption, "subreddit": item.subreddit})})
            for item in items[start:start + size]))
        shards.append(path)
    return shards


def write_cc3m(world: PilotWorld) -> list[Path]:
    """CC3M's TSVs in the mirror and img2dataset's output of the training TSV in the cc3m folder (the corpus's
    samples, then the HierarCaps training rows' pictures under their tier-4 captions); returns the shards."""
    items = [*_items(world, "cc3m", world.settings.cc3m_samples), *train_pictures(world.settings.world())]
    rows = [{"url": f"https://pilot.invalid/cc3m/{index}.jpg", "caption": item.caption}
            for index, item in enumerate(items)]
    tsv = "".join(f"{row['caption']}\t{row['url']}\n" for row in rows).encode()
    files = world.entry("cc3m")["files"]
    world.serve(files[0]["url"], tsv)
    world.serve(files[1]["url"], tsv.split(b"\n", 1)[0] + b"\n")
    return write_img2dataset(world.dest("cc3m") / IMG2DATASET_FOLDER, rows, [item.image for item in items],
                             world.settings.shard_size)


def write_yfcc15m(world: PilotWorld) -> list[Path]:
    """CLIP's YFCC15M subset list in the mirror, and what the prepare step leaves in the yfcc15m folder; returns
    the photos."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        write_corpus(world.settings.world(), "yfcc15m", root, world.settings.yfcc15m_samples)
        world.serve(world.entry("yfcc15m")["files"][0]["url"], bz2.compress((root / SUBSET).read_bytes()))
        files = sorted(path for path in root.rglob("*") if path.is_file())
        for path in files:
            world.leave("yfcc15m", path.relative_to(root).as_posix(), path.read_bytes())
    return [world.dest("yfcc15m") / path.relative_to(root) for path in files if path.suffix == ".jpg"]
