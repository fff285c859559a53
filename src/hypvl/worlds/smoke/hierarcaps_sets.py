"""The smoke world's HierarCaps (TAU-VAILab/hierarcaps): test rows (one-object pictures and their four-level caption
chains), train positive/negative chains, and the train rows' pictures, which upstream finds in CC3M by their
original caption (the last positive level): the smoke world puts them in its CC3M corpus (`train_pictures`), as
paper-scale acquisition leaves them there."""

from pathlib import Path

from hypvl.data.formats.hierarcaps import (
    HierarCapsItem,
    HierarCapsPair,
    write_hierarcaps_test,
    write_hierarcaps_train,
)
from hypvl.data.formats.images import encode_image

from . import captions, render
from .corpora import STYLES, CorpusItem, grown_box, random_object
from .render import save_image, scene_picture
from .settings import WorldSettings, rng_for
from .world import SCENES, TAXONOMY, TEXTURES, leaf_concepts


def _chain_negative(rng, obj: render.Placed, pic: render.Picture) -> tuple[str, str, str, str]:
    """HierarCaps negatives: tier i contradicts positive tier i and entails positive tier i-1."""
    leaf = obj.concept
    other_super = [s for s in TAXONOMY if s != leaf.superordinate]
    sibling_basics = [b for b in TAXONOMY[leaf.superordinate] if b != leaf.basic]
    sibling_leaves = [name for name, _ in TAXONOMY[leaf.superordinate][leaf.basic][1] if name != leaf.name]
    other_texture = [t for t in TEXTURES if t != obj.texture]
    other_scene = [s for s in SCENES if s != pic.scene]
    scene = captions.SCENE_PHRASES[other_scene[rng.integers(len(other_scene))]]
    return (captions.with_article([other_super[rng.integers(len(other_super))]]),
            captions.with_article([sibling_basics[rng.integers(len(sibling_basics))]]),
            captions.with_article([obj.size, sibling_leaves[rng.integers(len(sibling_leaves))]]),
            captions.with_article([obj.size, other_texture[rng.integers(len(other_texture))], leaf.name]) + " " + scene)


def write_hierarcaps_sets(settings: WorldSettings, test_csv: Path, train_csv: Path) -> dict:
    """HierarCaps-like test rows (one-object pictures, images at the reader's default folder
    `<csv folder>/../assets/test_imgs`) and train positive/negative chains."""
    image_root = Path(test_csv).parent.parent / "assets" / "test_imgs"
    leaves, items = leaf_concepts(), []
    for index in range(settings.hierarcaps_test):
        rng = rng_for(settings.seed, "hierarcaps/test", index)
        obj = random_object(rng, leaves)
        pic = scene_picture(rng, [obj], settings.image_size)
        name = f"COCO_val2014_{index + 1:012d}.jpg"
        items.append(HierarCapsItem(index, captions.caption_chain(obj, pic),
                                    f"http://images.cocodataset.org/val2014/{name}",
                                    save_image(pic.image, image_root / name)))
    write_hierarcaps_test(test_csv, items)
    pairs = [_train_row(settings, index)[0] for index in range(settings.hierarcaps_train)]
    write_hierarcaps_train(train_csv, pairs)
    return {"test": len(items), "train": len(pairs)}


def _train_row(settings: WorldSettings, index: int):
    """(pair, undrawn picture, its generator) of train row `index`: an object of a superordinate with several
    basic categories (so a sibling category contrasts it) and its chains."""
    rng = rng_for(settings.seed, "hierarcaps/train", index)
    obj = random_object(rng, [c for c in leaf_concepts() if len(TAXONOMY[c.superordinate]) > 1])
    pic = render.Picture(scene=str(rng.choice(list(SCENES))), objects=[obj])
    return HierarCapsPair(captions.caption_chain(obj, pic), _chain_negative(rng, obj, pic)), pic, rng


def train_pictures(settings: WorldSettings) -> list[CorpusItem]:
    """The train rows' pictures as CC3M corpus items (keys `hierarcaps<row>`) captioned with their last positive
    level, each with its object's box as an oracle region loosened and scored as the CC3M corpus's are."""
    size, style, items = settings.image_size, STYLES["cc3m"], []
    for index in range(settings.hierarcaps_train):
        pair, pic, rng = _train_row(settings, index)
        render.place(pic.objects, size, rng)  # drawn after the captions: they keep their stream
        render.draw(pic, size, rng)
        obj = pic.objects[0]
        region = {"text": captions.with_article([obj.size, obj.texture, obj.concept.name]),
                  "box": list(grown_box(obj.box, float(rng.uniform(*style.grow)), size)),
                  "score": round(float(rng.uniform(*style.score)), 4)}
        items.append(CorpusItem(f"hierarcaps{index:07d}", encode_image(pic.image), pair.positive[-1], "",
                                (region,)))
    return items
