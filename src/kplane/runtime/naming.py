"""English plurals of kind names, as kubebuilder/controller-gen derive a CRD's plural (flect).

Lowercase in, lowercase out. Irregular and uncountable words first (whole words), then suffix rules:
``-y`` after a consonant → ``-ies``; ``-s``, ``-x``, ``-z``, ``-ch``, ``-sh`` → ``-es``; otherwise ``-s``.
"""

from __future__ import annotations

_IRREGULAR = {
    "person": "people",
    "child": "children",
    "man": "men",
    "woman": "women",
    "mouse": "mice",
    "goose": "geese",
    "foot": "feet",
    "tooth": "teeth",
    "ox": "oxen",
    "index": "indices",
    "matrix": "matrices",
    "vertex": "vertices",
    "criterion": "criteria",
    "datum": "data",
    "medium": "media",
    "analysis": "analyses",
    "basis": "bases",
    "crisis": "crises",
    "thesis": "theses",
    "leaf": "leaves",
    "wolf": "wolves",
    "knife": "knives",
    "life": "lives",
    "wife": "wives",
    "half": "halves",
    "shelf": "shelves",
    "quiz": "quizzes",
}
_UNCOUNTABLE = frozenset(
    {"equipment", "information", "rice", "money", "species", "series", "fish", "sheep", "deer", "news"}
)
_PLURALS = frozenset(_IRREGULAR.values())


def pluralize(word: str) -> str:
    """The plural of ``word`` (see the module docstring)."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word in _UNCOUNTABLE or word in _PLURALS or not word:
        return word
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    return word + "s"
