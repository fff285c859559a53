"""The pilot's stand-ins for public dual encoders (hypvl.outside.pilot_weights): full-size models in the layout the Hub
serves for the library that loads them, fetched from the pilot's mirror through the real acquisition code and
imported through the real import step."""

from pathlib import Path

import pytest
import torch

from hypvl.acquire.fetch import HUB_RECORD, RECORDS, fetch
from hypvl.acquire.mirror import Mirror
from hypvl.outside.commands import weights_record
from hypvl.models.library_import import import_open_clip, import_transformers
from hypvl.outside.pilot_weights import PILOT_COMMIT, write_open_clip, write_transformers
from hypvl.outside.sources import outside_weights, weights_manifest

# CLIP ViT-B/32 (OpenAI's, and LAION's of the same architecture): 151,277,313 parameters (transformers' and open_clip's
# counts of openai/clip-vit-base-patch32 agree)
VIT_B32_PARAMETERS = 151_277_313
SOURCES = {"transformers": ("pretrained:openai/clip-vit-base-patch32", import_transformers),
           "open_clip": ("pretrained:laion/CLIP-ViT-B-32-laion2B-s34B-b79K", import_open_clip)}


@pytest.fixture(scope="module", params=sorted(SOURCES))
def fetched(request, tmp_path_factory):
    """A stand-in served by the mirror at a made-up commit of `main`, fetched as the weights-fetch rule does."""
    root = tmp_path_factory.mktemp(request.param)
    source, importer = SOURCES[request.param]
    outside = outside_weights(source)
    repo = weights_manifest()[outside.entry]["hf_snapshot"]["repo"]
    mirror = Mirror(root / "mirror")
    folder = mirror.hub_snapshot(repo, "model", PILOT_COMMIT, "main")
    if request.param == "open_clip":
        write_open_clip(folder, repo, seed=0)
    else:
        write_transformers(folder, repo, "clip", seed=0)
    dest = root / "weights" / outside.folder
    fetch(outside.entry, dest, sources=weights_manifest(), mirror=mirror)
    return outside, dest, importer


def test_a_fetched_stand_in_is_imported_at_its_released_size(fetched):
    outside, dest, importer = fetched
    assert (dest / HUB_RECORD).is_file()  # `main` pinned on the first fetch
    record = weights_record(outside, dest, standin=False)  # the import's check: no file it does not expect
    assert sorted(record["sha256"]) == sorted(p.name for p in dest.iterdir() if p.name not in RECORDS)
    model = importer(dest, outside.source)
    assert sum(p.numel() for p in model.model.parameters()) == VIT_B32_PARAMETERS
    assert model.image_size == 224
    with torch.no_grad():
        images = model.image_features(torch.rand(2, 3, 224, 224))
        texts = model.text_features(model.tokenizer(["a photo of a dog", "a cat"]))
    assert images.shape == texts.shape == (2, 512)
    assert model.tokenizer(["a"]).shape == (1, 77)


def test_the_import_still_refuses_a_file_the_manifest_does_not_list(fetched):
    outside, dest, _ = fetched
    stray = Path(dest) / "notes.txt"
    stray.write_text("left by hand")
    try:
        assert outside.unrecognised(dest) == ["notes.txt"]
    finally:
        stray.unlink()


def test_the_align_stand_in_preprocesses_as_the_released_align_base(tmp_path):
    """kakaobrain/align-base's processor: a bilinear square resize to 346, a centre crop to 289, pixels to [-1, 1]
    (include_top false); its text as AlignProcessor's, 64 tokens. Not AlignVisionConfig's default size (600)."""
    import json

    write_transformers(tmp_path, "kakaobrain/align-base", "align", seed=0)
    saved = json.loads((tmp_path / "preprocessor_config.json").read_text())
    assert saved["size"] == {"height": 346, "width": 346} and saved["crop_size"] == {"height": 289, "width": 289}
    assert saved["do_center_crop"] and saved["resample"] == 2 and not saved["include_top"]
    model = import_transformers(tmp_path, "pretrained:kakaobrain/align-base")
    assert model.image_size == 289 and model.tokenizer(["a"]).shape == (1, 64)
    assert model.pixel_scale.flatten().tolist() == pytest.approx([2.0] * 3)  # [0, 1] -> [-1, 1]
