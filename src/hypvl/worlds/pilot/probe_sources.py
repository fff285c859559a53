"""The pilot world's linear-probe sources (MERU Table 7): each set's source splits where the user places them at paper
scale (config `eval.probe_source_dir`), which the workflow's `probe_splits` jobs cut by the catalog's slices.

The layouts are those the real sources come in: CLIP_benchmark's webdataset (its `train` split, every class name
beside) for `clip_benchmark_wds` sets, and for `imagefolder` sets (whose slices cut TFDS splits) an image folder with
each image named by its record number, as a TFDS split materialised in order. Only the first `classes` classes have
images (the pilot evaluates with `eval.max_classes`; the probe splits are cut with the same cap), so an image folder
holds those classes' folders and names. Sizes are the smoke world's rule for a scaled-down stand-in
(`hypvl.worlds.smoke.probe_sources.source_sizes`: the slices' proportions kept, every slice holding every class,
`images_per_class` a class in the train slice), so the probe splits are cut with `--scaled-source` (config
`eval.probe_sources_scaled`). Records take classes in turn; pictures have each set's own size and mode.
"""

from pathlib import Path

from hypvl.data.catalog import dataset_names, load_dataset_info
from hypvl.worlds.smoke.classification import write_split
from hypvl.worlds.smoke.probe_sources import source_sizes
from hypvl.io import atomic_directory

from .classification import NATIVE, PHOTO, picture
from .world import PilotSettings


def write_probe_sources(settings: PilotSettings, folder: Path) -> dict[str, dict[str, int]]:
    """Every catalog set with linear-probe slices, under `<folder>/<set>` (config `eval.probe_source_dir` under
    data_dir); returns each set's record count per source split."""
    written = {}
    for name in dataset_names():
        info = load_dataset_info(name)
        if info.linear_probe is None:
            continue
        classes = min(settings.classes, info.num_classes)
        sizes = source_sizes(info, classes, settings.images_per_class, 1)
        names = info.class_names if info.layout == "clip_benchmark_wds" else info.class_names[:classes]
        shape = NATIVE.get(name, PHOTO)
        with atomic_directory(Path(folder) / name) as root:  # replaces only sources this step wrote
            for split, size in sizes.items():
                items = [(record % classes, picture(settings.seed, f"pilot/{name}/probe/{split}/{record % classes}",
                                                    record // classes, shape)) for record in range(size)]
                write_split(info, root, split, tuple(names), items, settings.shard_size, record_names=True)
        written[name] = sizes
    return written
