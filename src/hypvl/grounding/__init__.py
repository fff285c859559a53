"""Grounding: noun phrases and dependency parses (spaCy), phrase boxes (a detector or the
smoke world's own boxes), HyCoCLIP's box filters and square crops (HyCoCLIP App. A)."""
