"""The one reader of a classification split: CLIP_benchmark's webdataset and an image folder holding the same images
read back as the same records (labels, class names, pixels), in record order where the layout keeps one; a
webdataset indexed, not loaded; a folder in neither layout, a missing split, shards beyond nshards.txt and an
image that does not decode are one clear error."""

import numpy as np
import pytest
import torch
from PIL import Image

from helpers.evaluation import random_image
from helpers.fixture_edits import assign, edit_shard
from hypvl.data.formats.classification_split import read_classification_split
from hypvl.data.formats.clip_benchmark_wds import ClipBenchmarkDataset, LabelledImage, write_clip_benchmark_wds
from hypvl.data.formats.imagefolder import write_imagefolder
from hypvl.data.formats.images import encode_image
from hypvl.data.formats.shards import MemberSpan
from hypvl.errors import InputError

NAMES = ("dog", "car", "rose")


def _items(count: int = 7) -> list[tuple[int, Image.Image]]:
    """(label, image) of `count` records, classes taking turns (record order is not class order)."""
    g = torch.Generator().manual_seed(4)
    return [(record % len(NAMES), random_image(g, 12, 10)) for record in range(count)]


def _write_wds(root, items, split: str = "test", per_shard: int = 3) -> list[bytes]:
    """Write `items` as a CLIP_benchmark webdataset (PNG); returns each record's image bytes."""
    samples = tuple(LabelledImage(f"s{r:07d}", encode_image(image, "PNG"), label) for r, (label, image) in enumerate(items))
    write_clip_benchmark_wds(root, ClipBenchmarkDataset(NAMES, ("a {c}.",), samples), split, per_shard, "png")
    return [sample.image for sample in samples]


def _pixels(image: Image.Image) -> bytes:
    return np.asarray(image.convert("RGB")).tobytes()


def test_both_layouts_read_back_the_same_records_in_record_order(tmp_path):
    items = _items()
    written = _write_wds(tmp_path / "wds", items)
    write_imagefolder(tmp_path / "folder", "test", list(NAMES), items, record_names=True)
    wds = read_classification_split(tmp_path / "wds", "test")
    folder = read_classification_split(tmp_path / "folder", "test")
    assert (wds.layout, folder.layout) == ("clip_benchmark_wds", "imagefolder")
    assert wds.labels == folder.labels == tuple(label for label, _ in items) == (0, 1, 2, 0, 1, 2, 0)
    assert wds.class_names == folder.class_names == NAMES and wds.num_classes == folder.num_classes == 3
    assert wds.ordered and folder.ordered
    assert (wds.class_dirs, folder.class_dirs) == (None, ("0000", "0001", "0002"))
    assert len(wds) == len(folder) == 7 and wds.folder == tmp_path / "wds" / "test"
    for index, (_, image) in enumerate(items):
        assert _pixels(wds.load(index)) == _pixels(folder.load(index)) == _pixels(image)
    # the webdataset is an index into its 3 shards: each image is read from its shard when it is loaded
    assert all(isinstance(span, MemberSpan) for span in wds.images)
    assert [span.where.file.name for span in wds.images] == ["0.tar"] * 3 + ["1.tar"] * 3 + ["2.tar"]
    assert [span.read() for span in wds.images] == written


def test_an_image_folder_not_named_by_record_is_read_class_by_class(tmp_path):
    items = _items()
    write_imagefolder(tmp_path, "test", list(NAMES), items)
    split = read_classification_split(tmp_path, "test")
    assert not split.ordered and split.labels == (0, 0, 0, 1, 1, 2, 2)
    by_class = sorted(range(len(items)), key=lambda r: items[r][0])
    assert [_pixels(split.load(i)) for i in range(len(split))] == [_pixels(items[r][1]) for r in by_class]


def test_a_folder_in_neither_layout_or_missing_is_one_line_naming_it(tmp_path):
    _write_wds(tmp_path, _items())
    (tmp_path / "test" / "nshards.txt").unlink()
    with pytest.raises(InputError) as error:
        read_classification_split(tmp_path, "test")
    assert str(error.value) == (
        f"{tmp_path / 'test'}: neither layout of a classification split (expected CLIP_benchmark's webdataset, "
        "test/nshards.txt and shards with classnames.txt beside, or an image folder test/<class>/<image>)")
    with pytest.raises(InputError, match=f"^{tmp_path / 'val'}: split folder not found \\(expected CLIP_benchmark"):
        read_classification_split(tmp_path, "val")


def test_shards_beyond_the_announced_count_are_an_error_not_a_short_read(tmp_path):
    _write_wds(tmp_path, _items(), per_shard=2)  # 0.tar .. 3.tar
    (tmp_path / "test" / "nshards.txt").write_text("2\n")
    with pytest.raises(InputError, match=r"test/nshards.txt: announces 2 shards but the folder also holds "
                                         r"\['2.tar', '3.tar'\]"):
        read_classification_split(tmp_path, "test")


def test_an_image_that_does_not_decode_names_its_shard_and_key_when_loaded(tmp_path):
    _write_wds(tmp_path, _items())
    edit_shard(tmp_path / "test" / "1.tar", "s0000004", assign("png", b"\x89PNG broken"))
    split = read_classification_split(tmp_path, "test")
    assert split.load(3).size == (12, 10)
    with pytest.raises(InputError, match=r"1.tar: record key s0000004: image does not decode"):
        split.load(4)


def test_a_webdataset_whose_shards_hold_no_record_is_an_error(tmp_path):
    write_clip_benchmark_wds(tmp_path, ClipBenchmarkDataset(NAMES, ("a {c}.",), ()), "test")
    with pytest.raises(InputError, match=f"{tmp_path / 'test'}: its shards hold no records"):
        read_classification_split(tmp_path, "test")



def test_class_folders_named_by_label_index_are_in_numeric_order(tmp_path):
    """A prepare step's `<label index>/<file>` folders: folder 10 holds label 10, not label 2 ('10' < '2' by name)."""
    g = torch.Generator().manual_seed(5)
    for label in range(12):
        folder = tmp_path / "set" / "test" / str(label)
        folder.mkdir(parents=True)
        random_image(g, 8, 8).save(folder / f"{label}_a.png")
    split = read_classification_split(tmp_path / "set", "test")
    assert split.class_dirs == tuple(str(label) for label in range(12))
    assert [split.images[i].parent.name for i, label in enumerate(split.labels) if label == 10] == ["10"]


def test_a_class_cap_keeps_the_first_classes_and_their_images(tmp_path):
    """`eval.max_classes`: the first classes by label, their images in record order, the names cut alike."""
    items = _items(7)
    _write_wds(tmp_path / "wds", items)
    split = read_classification_split(tmp_path / "wds", "test")
    capped = split.first_classes(2)
    assert capped.num_classes == 2 and capped.class_names == NAMES[:2]
    assert capped.labels == tuple(label for label, _ in items if label < 2)
    assert [_pixels(capped.load(i)) for i in range(len(capped))] == \
        [_pixels(image) for label, image in items if label < 2]
    assert split.first_classes(None) is split and split.first_classes(3) is split
