"""Public dual encoders in open_clip's and transformers' on-disk layouts: a model saved in each real layout,
imported through the library's own loader and wrapped, gives the library's own embeddings (1e-6); its checkpoint
rebuilds it without a download; weights that do not fit, and models the installed libraries do not know, are
refused naming the source. The oracle is the library model itself, called as its documentation says."""

import json

import open_clip
import pytest
import torch
from PIL import Image
from open_clip.model import CLIP as OpenCLIP

from helpers.library import OPEN_CLIP_CFG, images, open_clip_folder, transformers_folder
from hypvl.data.formats.common import CaptionedImage
from hypvl.data.transforms import squeeze, to_tensor_batch
from hypvl.errors import InputError
from hypvl.evaluate.retrieval import retrieval_embeddings
from hypvl.models.checkpoints import load_checkpoint, save_checkpoint
from hypvl.models.library_import import import_library_model

TEXTS = ["a photo of a cat.", "Two dogs, running!", "", "a caption far longer than the context it is given here"]


def test_an_open_clip_folder_gives_open_clips_embeddings(tmp_path):
    model, folder = open_clip_folder(tmp_path)
    wrapped = import_library_model(folder, "open_clip", "pretrained:laion/test")
    pixels = (images() - torch.tensor([0.4, 0.5, 0.6]).view(3, 1, 1)) / torch.tensor([0.2, 0.3, 0.25]).view(3, 1, 1)
    tokens = open_clip.get_tokenizer("ViT-B-32", context_length=12)(TEXTS)
    assert torch.equal(wrapped.tokenizer(TEXTS), tokens)
    assert torch.allclose(wrapped.encode_image(images()), model.encode_image(pixels, normalize=True), atol=1e-6)
    assert torch.allclose(wrapped.encode_text(tokens), model.encode_text(tokens, normalize=True), atol=1e-6)
    assert wrapped.image_size == 32 and wrapped.trunk_features(images()).shape == (3, 32)
    assert wrapped.logit_scale is model.logit_scale or torch.equal(wrapped.logit_scale, model.logit_scale)


@pytest.mark.parametrize("architecture", ["clip", "align"])
def test_a_transformers_folder_gives_the_models_own_embeddings(tmp_path, architecture):
    model, tokenizer, processor, folder = transformers_folder(tmp_path, architecture)
    wrapped = import_library_model(folder, "transformers", f"pretrained:test/{architecture}")
    inputs = tokenizer(TEXTS, padding="max_length", truncation=True, max_length=12, return_tensors="pt")
    pixels = processor(images=list(images() * 255), do_resize=False, do_center_crop=False,
                       return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        expected_text = model.get_text_features(**inputs).pooler_output  # with its padding mask
        expected_image = model.get_image_features(pixel_values=pixels).pooler_output
        assert torch.equal(wrapped.tokenizer(TEXTS), inputs["input_ids"])
        assert torch.allclose(wrapped.text_features(wrapped.tokenizer(TEXTS)), expected_text, atol=1e-6)
        assert torch.allclose(wrapped.image_features(images()), expected_image, atol=1e-6)
        scores = wrapped.similarity(wrapped.encode_image(images()), wrapped.encode_text(wrapped.tokenizer(TEXTS)))
    assert scores.shape == (3, len(TEXTS)) and wrapped.image_size == 32


def test_align_text_is_padded_and_truncated_as_its_processor_does_not_to_berts_positions(tmp_path):
    """BERT has 512 positions; AlignProcessor pads and cuts text to 64 tokens, as ALIGN is used."""
    from transformers import AlignProcessor

    _, tokenizer, processor, folder = transformers_folder(tmp_path, "align", positions=512)
    wrapped = import_library_model(folder, "transformers", "pretrained:test/align")
    texts = [*TEXTS, " ".join(["cat"] * 100)]
    expected = AlignProcessor(image_processor=processor, tokenizer=tokenizer)(
        text=texts, truncation=True, return_tensors="pt")["input_ids"]
    assert expected.shape == (len(texts), 64) and torch.equal(wrapped.tokenizer(texts), expected)


@pytest.mark.parametrize("library, architecture", [("open_clip", None), ("transformers", "clip"),
                                                   ("transformers", "align")])
def test_retrieval_sees_a_public_model_through_its_own_preprocessing(tmp_path, library, architecture):
    """The HierarCaps paper evaluates OpenAI's, LAION's and ALIGN's models through their own image processing (CLIP:
    shorter side to the input size and a centre crop; ALIGN: a square resize and a centre crop), not MERU's squeeze.
    The oracle: the library's own transform of a 48 x 40 image, into the library's own model."""
    image_path = tmp_path / "image.png"
    Image.fromarray(torch.randint(0, 256, (40, 48, 3), generator=torch.Generator().manual_seed(2),
                                  dtype=torch.uint8).numpy()).save(image_path)
    image = Image.open(image_path).convert("RGB")
    if library == "open_clip":
        model, folder = open_clip_folder(tmp_path)
        preprocess = open_clip.image_transform(32, is_train=False, mean=OPEN_CLIP_CFG["preprocess_cfg"]["mean"],
                                               std=OPEN_CLIP_CFG["preprocess_cfg"]["std"])
        with torch.no_grad():
            own = model.encode_image(preprocess(image)[None], normalize=True)
    else:
        model, _, processor, folder = transformers_folder(tmp_path, architecture)
        with torch.no_grad():
            own = model.get_image_features(**processor(images=image, return_tensors="pt")).pooler_output
        own = torch.nn.functional.normalize(own, dim=-1)
    wrapped = import_library_model(folder, library, "pretrained:test")
    images, _, _ = retrieval_embeddings(wrapped, wrapped.tokenizer, [CaptionedImage(image_path, ("a cat",))], 32, 4,
                                        "test")
    assert torch.allclose(images, own, atol=1e-5)
    with torch.no_grad():
        squeezed = wrapped.encode_image(to_tensor_batch([squeeze(image, 32)]))
    assert not torch.allclose(squeezed, own, atol=1e-2)  # MERU's squeeze, what retrieval took before


@pytest.mark.parametrize("library", ["open_clip", "transformers"])
def test_a_checkpoint_of_a_wrapped_model_rebuilds_it_without_a_download(tmp_path, library):
    folder = open_clip_folder(tmp_path)[1] if library == "open_clip" else transformers_folder(tmp_path, "clip")[3]
    wrapped = import_library_model(folder, library, "pretrained:test")
    save_checkpoint(tmp_path / "checkpoint.pt", wrapped, {**wrapped.recipe(), "experiment": "e"}, step=0)
    rebuilt, recipe = load_checkpoint(tmp_path / "checkpoint.pt")
    assert recipe["library"] == library and type(rebuilt) is type(wrapped)
    tokens = wrapped.tokenizer(TEXTS)
    assert torch.equal(rebuilt.tokenizer(TEXTS), tokens)
    assert torch.equal(rebuilt.encode_image(images()), wrapped.encode_image(images()))
    assert torch.equal(rebuilt.encode_text(tokens), wrapped.encode_text(tokens))


@pytest.mark.parametrize("library", ["open_clip", "transformers"])
def test_text_parameters_are_the_text_tower_and_its_projection(tmp_path, library):
    folder = open_clip_folder(tmp_path)[1] if library == "open_clip" else transformers_folder(tmp_path, "align")[3]
    wrapped = import_library_model(folder, library, "pretrained:test")
    text = {"open_clip": ("model.token_embedding.", "model.positional_embedding", "model.transformer.",
                          "model.ln_final.", "model.text_projection"),
            "transformers": ("model.text_model.", "model.text_projection.")}[library]
    expected = {id(p) for name, p in wrapped.named_parameters() if name.startswith(text)}
    assert {id(p) for p in wrapped.text_parameters()} == expected
    assert len(expected) < len(list(wrapped.parameters()))  # the image tower and the scale stay out


def test_weights_of_another_architecture_are_refused_naming_the_source(tmp_path):
    wider = {**OPEN_CLIP_CFG, "model_cfg": {**OPEN_CLIP_CFG["model_cfg"], "embed_dim": 24}}
    _, folder = open_clip_folder(tmp_path, state=OpenCLIP(**wider["model_cfg"]).state_dict())
    with pytest.raises(InputError, match=r"pretrained:laion/test: .*open_clip does not load.*size mismatch"):
        import_library_model(folder, "open_clip", "pretrained:laion/test")
    _, _, _, clip = transformers_folder(tmp_path, "clip")
    config = json.loads((clip / "config.json").read_text())
    config["projection_dim"] = 24
    (clip / "config.json").write_text(json.dumps(config))
    with pytest.raises(InputError, match=r"pretrained:openai/test: .*(do not fit|does not load).*projection"):
        import_library_model(clip, "transformers", "pretrained:openai/test")


def test_a_model_the_installed_open_clip_does_not_know_is_refused(tmp_path):
    unknown = {**OPEN_CLIP_CFG, "model_cfg": {**OPEN_CLIP_CFG["model_cfg"],
                                              "vision_cfg": {"timm_model_name": "vit_no_such_model", "image_size": 32}}}
    folder = tmp_path / "unknown"
    folder.mkdir()
    (folder / "open_clip_config.json").write_text(json.dumps(unknown))
    with pytest.raises(InputError, match=r"^pretrained:laion/unknown: .*does not load.*vit_no_such_model"):
        import_library_model(folder, "open_clip", "pretrained:laion/unknown")
    with pytest.raises(InputError, match=r"pretrained:laion/unknown: .* is not an open_clip model folder"):
        import_library_model(tmp_path, "open_clip", "pretrained:laion/unknown")
    with pytest.raises(InputError, match="unknown library 'jax'"):
        import_library_model(folder, "jax", "pretrained:laion/unknown")
