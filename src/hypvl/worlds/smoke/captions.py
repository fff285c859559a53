"""A small caption grammar for smoke-world pictures, with the noun phrase of each object."""

import numpy as np

from .render import Picture, Placed

SCENE_PHRASES = {
    "beach": "on the beach", "forest": "in the forest", "desert": "in the desert",
    "snowfield": "in the snow", "city": "in the city", "ocean": "by the ocean",
    "farmland": "on a farm", "night": "at night",
}
OPENINGS = ["", "a photo of ", "look at ", "my picture of "]
# RedCaps-like posts also open with abstract nouns, which grounding must drop (HyCoCLIP App. A)
POST_OPENINGS = [*OPENINGS, "the beauty of ", "pure joy: ", "my love for "]
JOINS = [" and ", " next to ", " with "]
# subreddit per superordinate category, as RedCaps captions carry one
SUBREDDITS = {"animal": "aww", "vehicle": "carporn", "food": "foodporn", "plant": "flowers"}


# probability of naming an object by its leaf, basic-level or superordinate noun
LEVEL_P = (0.65, 0.25, 0.10)
HYPERNYMED_LEVEL_P = (0.2, 0.5, 0.3)  # CC3M-like: Conceptual Captions replaces specific names by hypernyms


def with_article(words: list[str]) -> str:
    """'an orange dog' / 'a dog': the indefinite article for the first word, then the words."""
    return " ".join(["an" if words[0][0] in "aeiou" else "a", *words])


def noun_phrase(obj: Placed, rng: np.random.Generator, level_p=LEVEL_P) -> str:
    """'a small striped beagle': article, optional size and texture, and a noun at some level."""
    level = rng.choice(3, p=level_p)
    noun = (obj.concept.name, obj.concept.basic, obj.concept.superordinate)[level]
    words = []
    if rng.random() < 0.5 and obj.size != "full":  # a close-up's size goes unsaid
        words.append(obj.size)
    if rng.random() < 0.8:
        words.append(obj.texture)
    words.append(noun)
    return with_article(words)


def caption(picture: Picture, rng: np.random.Generator, level_p=LEVEL_P,
            openings=OPENINGS) -> tuple[str, list[tuple[int, int]]]:
    """A caption for `picture` and the character span of each object's noun phrase in it."""
    text = str(rng.choice(openings))
    spans = []
    for i, obj in enumerate(picture.objects):
        if i:
            text += str(rng.choice(JOINS))
        phrase = noun_phrase(obj, rng, level_p)
        spans.append((len(text), len(text) + len(phrase)))
        text += phrase
    if rng.random() < 0.6:
        text += " " + SCENE_PHRASES[picture.scene]
    if picture.country is not None and rng.random() < 0.8:
        text += f" in {picture.country}"
    return text, spans


def subreddit(picture: Picture) -> str:
    """The subreddit a RedCaps-like post of `picture` comes from."""
    return SUBREDDITS[picture.objects[0].concept.superordinate]


def scene_tail(picture: Picture) -> str:
    """' on the beach in france': the scene phrase and, if any, the country."""
    tail = " " + SCENE_PHRASES[picture.scene]
    return tail + (f" in {picture.country}" if picture.country is not None else "")


def caption_chain(obj: Placed, picture: Picture) -> tuple[str, str, str, str]:
    """Four captions of a one-object picture, general to specific, each entailed by the next:
    'an animal' => 'a dog' => 'a small beagle' => 'a small striped beagle on the beach'."""
    leaf = obj.concept
    return (with_article([leaf.superordinate]), with_article([leaf.basic]),
            with_article([obj.size, leaf.name]),
            with_article([obj.size, obj.texture, leaf.name]) + scene_tail(picture))
