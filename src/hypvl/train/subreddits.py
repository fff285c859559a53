"""MERU's text augmentation (Sec. 4.1; `RedCapsTarMapper` in meru/data/redcaps.py): a RedCaps caption prefixed
with its post's subreddit, segmented into words as MERU does with `wordsegment`: "{subreddit words} : {caption}",
e.g. itookapicture -> "i took a picture : ...".
"""

import functools


@functools.cache
def _wordsegment():
    import wordsegment

    wordsegment.load()  # English unigram and bigram counts: about a second, once per process that needs them
    return wordsegment


@functools.cache
def subreddit_words(subreddit: str) -> str:
    """The subreddit name as lower-case words, segmented by wordsegment (MERU's segmentation)."""
    segmenter = _wordsegment()
    return " ".join(segmenter.segment(segmenter.clean(subreddit)))


def prefixed_caption(caption: str, subreddit: str) -> str:
    """`caption` prefixed with its subreddit's words, in MERU's format."""
    return f"{subreddit_words(subreddit)} : {caption}"
