"""YFCC15M (CLIP's subset of YFCC100M): a hand-written fixture in the distributed layout, the writer's round trip,
and one clear error per malformed record."""

import io
import re

import pytest
from PIL import Image

from hypvl.data.formats.yfcc import METADATA, SUBSET, YFCCSample, image_path, iter_yfcc, read_yfcc, write_yfcc
from hypvl.errors import InputError

# YFCC100M metadata rows as distributed: 25 tab-separated fields, title and description URL-encoded ('+' = space).
# Line 2 (a video) is not in the subset; line 3's title is empty, so its caption is its cleaned description.
ROWS = [
    ["1", "6985418911", "4e2f7a3f5aa6b7f8a9c0d1e2f3a4b5c6", "35034350743@N01", "barefoot+traveler",
     "2012-04-21 16:03:47.0", "1335223187", "Canon+EOS+5D+Mark+II", "Sunset+over+the+harbour%2C+Sydney",
     "Taken+from+the+ferry", "harbour,sunset,boats", "", "151.210233", "-33.857063", "16",
     "http://www.flickr.com/photos/35034350743@N01/6985418911/",
     "http://farm8.staticflickr.com/7037/6985418911_4e8f8a1b2c.jpg", "Attribution-NonCommercial-ShareAlike License",
     "http://creativecommons.org/licenses/by-nc-sa/2.0/", "7037", "8", "4e8f8a1b2c", "9d8e7f6a5b", "jpg", "0"],
    ["2", "3425117203", "0badc0ffee0badc0ffee0badc0ffee00", "12037949754@N01", "vid", "2009-04-11 10:00:00.0",
     "1239444000", "", "Clip", "", "", "", "", "", "", "http://www.flickr.com/photos/12037949754@N01/3425117203/",
     "http://www.flickr.com/photos/12037949754@N01/3425117203/play/", "Attribution License",
     "http://creativecommons.org/licenses/by/2.0/", "3629", "4", "ab12cd34ef", "ab12cd34ef", "mp4", "1"],
    ["3", "2246431387", "a9f3c2e1d0b9a8f7e6d5c4b3a2918070", "7476271@N03", "mk", "2008-02-05 12:11:09.0",
     "1202236269", "NIKON+D80", "",
     ("%3Cb%3EA+red+tram%3C%2Fb%3E+on+Swanston+St+%3Ca+href%3D%22http%3A%2F%2Fwww.flickr.com%2F%22%3E%3C%2Fa%3E"
      "+http%3A%2F%2Fwww.example.com%2Ftrams"), "tram,melbourne", "", "", "", "", "", "", "Attribution License",
     "http://creativecommons.org/licenses/by/2.0/", "2312", "3", "0f1e2d3c4b", "5a6b7c8d9e", "jpg", "0"],
]
SUBSET_ROWS = [["1", "6985418911", "4e2f7a3f5aa6b7f8a9c0d1e2f3a4b5c6"],
               ["3", "2246431387", "a9f3c2e1d0b9a8f7e6d5c4b3a2918070"]]


def jpeg(shade: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (shade, 0, 0)).save(buffer, "JPEG")
    return buffer.getvalue()


def fixture(folder, rows=ROWS, subset=SUBSET_ROWS, images=True):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / METADATA).write_text("".join("\t".join(row) + "\n" for row in rows), encoding="utf-8")
    (folder / SUBSET).write_text("".join("\t".join(row) + "\n" for row in subset), encoding="utf-8")
    if images:
        for shade, row in enumerate(subset):
            path = image_path(folder, row[-1])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(jpeg(40 * shade))
    return folder


def test_reads_the_subset_photos_of_the_distributed_layout(tmp_path):
    samples = read_yfcc(fixture(tmp_path))
    assert [s.key for s in samples] == ["6985418911", "2246431387"]  # the video of line 2 is not in the subset
    first, second = samples
    assert (first.line_number, first.photo_hash) == (1, "4e2f7a3f5aa6b7f8a9c0d1e2f3a4b5c6")
    assert first.title == "Sunset over the harbour, Sydney" and first.caption == first.title
    assert second.title == "" and second.caption == "A red tram on Swanston St"
    assert second.image == (tmp_path / "images" / "a9f" / "3c2" / "a9f3c2e1d0b9a8f7e6d5c4b3a2918070.jpg").read_bytes()


def test_writer_round_trips_through_the_reader(tmp_path):
    samples = [YFCCSample(7, "1000001", "00ff" * 8, "Café & crème: 50% off + more\tnow", "", jpeg(10)),
               YFCCSample(9, "1000002", "1a2b" * 8, "", "<i>two cats</i> www.cats.example", jpeg(90))]
    write_yfcc(tmp_path, samples)
    assert read_yfcc(tmp_path) == samples
    assert [s.caption for s in read_yfcc(tmp_path)] == ["Café & crème: 50% off + more now", "two cats"]
    assert "Caf%C3%A9+%26+cr%C3%A8me" in (tmp_path / METADATA).read_text()


def _replace(rows, index, field, value):
    rows = [list(row) for row in rows]
    rows[index][field] = value
    return rows


@pytest.mark.parametrize("rows, subset, images, message", [
    ([ROWS[0][:-1], *ROWS[1:]], SUBSET_ROWS, True,
     f"{METADATA}: record line 1: has 24 tab-separated fields, expected 25"),
    (_replace(ROWS, 2, 2, "ffffffffffffffffffffffffffffffff"), SUBSET_ROWS, True,
     f"{METADATA}: record line 3: photo 2246431387: line number and hash"),
    (_replace(ROWS, 0, 24, "1"), SUBSET_ROWS, True, f"{METADATA}: record line 1: photo 6985418911: marker '1'"),
    (_replace(_replace(ROWS, 0, 8, ""), 0, 9, "%3Cbr%3E"), SUBSET_ROWS, True,
     f"{METADATA}: record line 1: photo 6985418911: neither title nor description"),
    (_replace(ROWS, 0, 1, "69854x8911"), [["1", "69854x8911", ROWS[0][2]]], True,
     f"{SUBSET}: record line 1: line number '1' and photo id '69854x8911' must be decimal integers"),
    (ROWS, SUBSET_ROWS, False, f"{METADATA}: record line 1: photo 6985418911: image file not found: "),
    (ROWS, [*SUBSET_ROWS, ["2"]], True, f"{SUBSET}: record line 3: has 1 tab-separated fields, expected 3"),
    (ROWS, [*SUBSET_ROWS, SUBSET_ROWS[0]], True, f"{SUBSET}: record line 3: photo id 6985418911 is listed twice"),
    (ROWS, [*SUBSET_ROWS, ["4", "5550001", "abcdef0123"]], True,
     f"{METADATA}: no metadata row for 1 photo\\(s\\) of .*{SUBSET}, e.g. \\['5550001'\\]"),
])
def test_a_malformed_record_is_one_error_naming_the_file_and_record(tmp_path, rows, subset, images, message):
    folder = fixture(tmp_path / "yfcc15m", rows, subset, images)
    with pytest.raises(InputError, match=re.escape(str(folder)) + "/" + message):
        read_yfcc(folder)


def test_a_missing_subset_list_is_named(tmp_path):
    folder = fixture(tmp_path)
    (folder / SUBSET).unlink()
    with pytest.raises(InputError, match=re.escape(str(folder / SUBSET)) + ": file not found"):
        read_yfcc(folder)


def test_a_reader_given_skip_passes_over_rows_without_photo_or_text(tmp_path):
    """About 1% of the CLIP list has no photo upstream (SLIP kept 14.69M of 14.83M): with `skip` such rows, and rows
    without any text, are passed over with their reason; without it they stop the reader (the parametrised cases)."""
    rows = _replace(_replace(ROWS, 2, 8, ""), 2, 9, "%3Cbr%3E")  # line 3: no text once cleaned
    rows = [*rows, _replace(ROWS, 0, 0, "4")[0]]
    rows[-1][1:3] = ["6985418912", "5f2f7a3f5aa6b7f8a9c0d1e2f3a4b5c6"]  # line 4: listed, its photo missing
    folder = fixture(tmp_path / "yfcc15m", rows, SUBSET_ROWS)
    (folder / SUBSET).write_text("".join("\t".join(r) + "\n" for r in [*SUBSET_ROWS, ["4", *rows[-1][1:3]]]))
    skipped = []
    samples = list(iter_yfcc(folder, lambda reason, message: skipped.append((reason, message))))
    assert [s.key for s in samples] == ["6985418911"]
    assert [reason for reason, _ in skipped] == ["no_text", "no_image"]
    assert "line 3: photo 2246431387: neither title nor description" in skipped[0][1]
    assert "line 4: photo 6985418912: image file not found" in skipped[1][1]


def test_captions_are_the_title_and_the_description_that_hold_text(tmp_path):
    """SLIP draws title or description at every access; a sample keeps both (cleaned, non-empty, no repeat)."""
    first, second = read_yfcc(fixture(tmp_path))
    assert first.captions == ["Sunset over the harbour, Sydney", "Taken from the ferry"]
    assert second.captions == ["A red tram on Swanston St"] and second.caption == second.captions[0]
    same = YFCCSample(1, "1", "ab" * 8, "two cats", "<b>two cats</b>", b"")
    assert same.captions == ["two cats"]


def test_data_check_passes_over_missing_photos_only_when_images_are_not_checked(tmp_path):
    from hypvl.data.check import check

    folder = fixture(tmp_path / "yfcc15m")
    image_path(folder, SUBSET_ROWS[0][2]).unlink()
    with pytest.raises(InputError, match="photo 6985418911: image file not found"):
        check("yfcc", folder)
    count, first = check("yfcc", folder, check_images=False)
    assert (count, first.key) == (1, "2246431387")
