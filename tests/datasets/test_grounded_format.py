"""HyCoCLIP's processed grounded shards and image folders: round trips and clear errors."""

import io
import tarfile

import pytest
from PIL import Image

from hypvl.data.formats.grounded import GroundedRecord, iter_grounded, write_grounded_shards
from hypvl.data.formats.imagefolder import load_image, read_imagefolder, write_imagefolder
from hypvl.data.formats.images import CorruptImage, border_resize, decode_image, encode_image
from hypvl.errors import InputError


def _image(colour=(200, 10, 10), size=(20, 12)) -> bytes:
    return encode_image(Image.new("RGB", size, colour))


def _records(n=5):
    return [GroundedRecord(f"s{i:03d}", _image(), f"caption {i}", [(_image((0, 0, 200)), f"box {i}.{j}")
                                                                 for j in range(i % 3)]) for i in range(n)]


def test_round_trip_across_shards(tmp_path):
    written = _records(5)
    paths = write_grounded_shards(written, tmp_path, shard_size=2)
    assert [p.name for p in paths] == ["grounded-000000.tar", "grounded-000001.tar", "grounded-000002.tar"]
    read = list(iter_grounded(paths))
    assert [(r.key, r.image, r.caption, r.boxes) for r in read] == \
        [(r.key, r.image, r.caption, r.boxes) for r in written]


def test_a_posts_subreddit_round_trips_beside_the_hycoclip_members(tmp_path):
    [record] = _records(3)[2:]
    record.subreddit = "itookapicture"
    [path] = write_grounded_shards([record, _records(1)[0]], tmp_path)
    with tarfile.open(path) as tar:
        assert "s002.subreddit.txt" in tar.getnames()
    assert [r.subreddit for r in iter_grounded(path)] == ["itookapicture", None]


def test_several_captions_round_trip_in_the_shard_and_its_decoded_twin(tmp_path):
    """A YFCC15M photo's title and description (SLIP draws one at every access) as captions.json, child.txt's
    first; a sample with one caption has none. A bad list is an error naming the shard and sample."""
    from hypvl.data.formats.decoded import read_twin, write_twin

    first, second = _records(2)
    first.captions = ["caption 0", "a description"]
    [path] = write_grounded_shards([first, second], tmp_path)
    with tarfile.open(path) as tar:
        assert "s000.captions.json" in tar.getnames() and "s001.captions.json" not in tar.getnames()
    assert [r.captions for r in iter_grounded(path)] == [["caption 0", "a description"], []]
    write_twin(path)
    assert [r.captions for r, _ in read_twin(path)] == [["caption 0", "a description"], []]
    bad = tmp_path / "bad.tar"
    _write_tar(bad, [("k1.child.jpg", _image()), ("k1.child.txt", b"x"), ("k1.numparents.txt", b"0"),
                     ("k1.captions.json", b'["y", "x"]')])
    with pytest.raises(InputError, match=r"bad\.tar: sample 'k1': captions.json should list the sample's texts"):
        list(iter_grounded([bad]))


def test_member_names_follow_hycoclip_layout(tmp_path):
    [path] = write_grounded_shards(_records(3)[2:], tmp_path)
    with tarfile.open(path) as tar:
        assert tar.getnames() == ["s002.child.jpg", "s002.child.txt", "s002.numparents.txt",
                                  "s002.parent000.jpg", "s002.parent000.txt",
                                  "s002.parent001.jpg", "s002.parent001.txt"]


def _write_tar(path, members):
    with tarfile.open(path, "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_missing_parent_names_file_and_sample(tmp_path):
    path = tmp_path / "bad.tar"
    _write_tar(path, [("k1.child.jpg", _image()), ("k1.child.txt", b"x"), ("k1.numparents.txt", b"2"),
                      ("k1.parent000.jpg", _image()), ("k1.parent000.txt", b"a box")])
    with pytest.raises(InputError, match=r"bad\.tar: sample 'k1'.*parent001 is missing"):
        list(iter_grounded([path]))


def test_missing_caption_and_bad_count_are_errors(tmp_path):
    path = tmp_path / "bad.tar"
    _write_tar(path, [("k1.child.jpg", _image()), ("k1.numparents.txt", b"0")])
    with pytest.raises(InputError, match="missing child.txt"):
        list(iter_grounded([path]))
    _write_tar(path, [("k1.child.jpg", _image()), ("k1.child.txt", b"x"), ("k1.numparents.txt", b"two")])
    with pytest.raises(InputError, match="not an integer"):
        list(iter_grounded([path]))


def test_truncated_shard_is_an_error_naming_the_file(tmp_path):
    [path] = write_grounded_shards(_records(4), tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match=str(path.name)):
        list(iter_grounded([path]))


def test_missing_shard(tmp_path):
    with pytest.raises(InputError, match="not found"):
        list(iter_grounded([tmp_path / "nope.tar"]))


def test_corrupt_image_bytes_name_their_source():
    with pytest.raises(CorruptImage, match="shard.tar: sample 'k'"):
        decode_image(b"not a jpeg", "shard.tar: sample 'k'")


def test_border_resize_pads_to_a_centred_square():
    wide = Image.new("RGB", (40, 10), (0, 0, 0))
    square = border_resize(wide, 20)
    assert square.size == (20, 20)
    assert square.getpixel((10, 0)) == (255, 255, 255)  # padding above
    assert square.getpixel((10, 10)) == (0, 0, 0)  # content in the middle rows


def test_imagefolder_round_trip_and_class_order(tmp_path):
    items = [(1, Image.new("RGB", (8, 8), (0, 255, 0))), (0, Image.new("RGB", (8, 8), (255, 0, 0))),
             (1, Image.new("RGB", (8, 8), (0, 0, 255)))]
    write_imagefolder(tmp_path, "test", ["red", "green"], items)
    dataset = read_imagefolder(tmp_path, "test")
    assert dataset.class_names == ["red", "green"]
    assert [label for _, label in dataset.samples] == [0, 1, 1]
    assert load_image(dataset.samples[0][0]).getpixel((0, 0)) == (255, 0, 0)


def test_imagefolder_errors(tmp_path):
    with pytest.raises(InputError, match="split folder not found"):
        read_imagefolder(tmp_path, "test")
    (tmp_path / "test" / "a").mkdir(parents=True)
    with pytest.raises(InputError, match="holds no images"):
        read_imagefolder(tmp_path, "test")
    Image.new("RGB", (4, 4)).save(tmp_path / "test" / "a" / "x.png")
    (tmp_path / "classnames.txt").write_text("a\nb\n")
    with pytest.raises(InputError, match="2 class names for 1 class folders"):
        read_imagefolder(tmp_path, "test")
    (tmp_path / "test" / "a" / "y.png").write_bytes(b"garbage")
    with pytest.raises(InputError, match="y.png: image does not decode"):
        load_image(tmp_path / "test" / "a" / "y.png")
