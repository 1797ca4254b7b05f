"""The Porter stemmer exactly as SQLite's FTS5 ``porter`` tokenizer applies it.

Why a Python copy: query expansion, trigger matching and the in-memory keyword index
must produce the very terms FTS5 stores. A test checks this stemmer against FTS5's own
vocabulary over tens of thousands of real words; keep the two in lock-step.

FTS5 passes tokens shorter than 3 or longer than 64 bytes through unchanged and treats
every byte other than a, e, i, o, u (and y after a consonant) as a consonant.
"""

from __future__ import annotations

from functools import lru_cache

_MAX_TOKEN = 64


def _is_vowel(c: str, y_is_vowel: bool) -> bool:
    return c in "aeiou" or (y_is_vowel and c == "y")


def _gobble_vc(stem: str, prev_consonant: bool) -> int:
    """Length of the leading [C]V+C (one VC measure unit) or 0 when there is none."""
    n = len(stem)
    cons = prev_consonant
    i = 0
    while i < n:
        cons = not _is_vowel(stem[i], cons)
        if not cons:
            break
        i += 1
    i += 1
    while i < n:
        cons = not _is_vowel(stem[i], cons)
        if cons:
            return i + 1
        i += 1
    return 0


def _m_gt0(stem: str) -> bool:
    return _gobble_vc(stem, False) > 0


def _m_gt1(stem: str) -> bool:
    n = _gobble_vc(stem, False)
    return bool(n) and _gobble_vc(stem[n:], True) > 0


def _m_eq1(stem: str) -> bool:
    n = _gobble_vc(stem, False)
    return bool(n) and _gobble_vc(stem[n:], True) == 0


def _o_star(stem: str) -> bool:
    """*o: the stem ends consonant-vowel-consonant, the last not w, x or y."""
    if stem[-1] in "wxy":
        return False
    mask = 0
    cons = False
    for c in stem:
        cons = not _is_vowel(c, cons)
        mask = (mask << 1) + int(cons)
    return (mask & 0x7) == 0x5


def _has_vowel(stem: str) -> bool:
    return any(_is_vowel(c, i > 0) for i, c in enumerate(stem))


def _m_gt1_s_or_t(stem: str) -> bool:
    return stem[-1:] in ("s", "t") and _m_gt1(stem)


# Each step: rules grouped by the word's second-to-last letter; within a group the first
# matching suffix decides (a failed condition ends the step), as in FTS5.
_Rule = tuple[str, str, object]

_STEP2: dict[str, list[_Rule]] = {
    "a": [("ational", "ate", _m_gt0), ("tional", "tion", _m_gt0)],
    "c": [("enci", "ence", _m_gt0), ("anci", "ance", _m_gt0)],
    "e": [("izer", "ize", _m_gt0)],
    "g": [("logi", "log", _m_gt0)],
    "l": [
        ("bli", "ble", _m_gt0),
        ("alli", "al", _m_gt0),
        ("entli", "ent", _m_gt0),
        ("eli", "e", _m_gt0),
        ("ousli", "ous", _m_gt0),
    ],
    "o": [("ization", "ize", _m_gt0), ("ation", "ate", _m_gt0), ("ator", "ate", _m_gt0)],
    "s": [
        ("alism", "al", _m_gt0),
        ("iveness", "ive", _m_gt0),
        ("fulness", "ful", _m_gt0),
        ("ousness", "ous", _m_gt0),
    ],
    "t": [("aliti", "al", _m_gt0), ("iviti", "ive", _m_gt0), ("biliti", "ble", _m_gt0)],
}
_STEP3: dict[str, list[_Rule]] = {
    "a": [("ical", "ic", _m_gt0)],
    "s": [("ness", "", _m_gt0)],
    "t": [("icate", "ic", _m_gt0), ("iciti", "ic", _m_gt0)],
    "u": [("ful", "", _m_gt0)],
    "v": [("ative", "", _m_gt0)],
    "z": [("alize", "al", _m_gt0)],
}
_STEP4: dict[str, list[_Rule]] = {
    "a": [("al", "", _m_gt1)],
    "c": [("ance", "", _m_gt1), ("ence", "", _m_gt1)],
    "e": [("er", "", _m_gt1)],
    "i": [("ic", "", _m_gt1)],
    "l": [("able", "", _m_gt1), ("ible", "", _m_gt1)],
    "n": [("ant", "", _m_gt1), ("ement", "", _m_gt1), ("ment", "", _m_gt1), ("ent", "", _m_gt1)],
    "o": [("ion", "", _m_gt1_s_or_t), ("ou", "", _m_gt1)],
    "s": [("ism", "", _m_gt1)],
    "t": [("ate", "", _m_gt1), ("iti", "", _m_gt1)],
    "u": [("ous", "", _m_gt1)],
    "v": [("ive", "", _m_gt1)],
    "z": [("ize", "", _m_gt1)],
}


def _apply(word: str, table: dict[str, list[_Rule]]) -> str:
    if len(word) < 2:
        return word
    for suffix, replacement, condition in table.get(word[-2], ()):
        # FTS5 requires the word to be strictly longer than the suffix.
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = word[: -len(suffix)]
            if condition(stem):  # type: ignore[operator]
                return stem + replacement
            return word
    return word


def _step1a(w: str) -> str:
    if w.endswith("s"):
        if w[-2:-1] == "e":
            if (len(w) > 4 and w[-4:-2] == "ss") or (len(w) > 3 and w[-3] == "i"):
                return w[:-2]
            return w[:-1]
        if w[-2:-1] != "s":
            return w[:-1]
    return w


def _step1b(w: str) -> tuple[str, bool]:
    """Returns the word and whether an -ed/-ing ending was removed."""
    key = w[-2:-1]
    if key == "e":
        if len(w) > 3 and w.endswith("eed"):
            return (w[:-1], False) if _m_gt0(w[:-3]) else (w, False)
        if len(w) > 2 and w.endswith("ed"):
            return (w[:-2], True) if _has_vowel(w[:-2]) else (w, False)
    elif key == "n" and len(w) > 3 and w.endswith("ing"):
        return (w[:-3], True) if _has_vowel(w[:-3]) else (w, False)
    return w, False


def _step1b2(w: str) -> tuple[str, bool]:
    for suffix, replacement in (("at", "ate"), ("bl", "ble"), ("iz", "ize")):
        if len(w) > 2 and w.endswith(suffix):
            return w[:-2] + replacement, True
    return w, False


@lru_cache(maxsize=200_000)
def stem(token: str) -> str:
    """Stem one lower-case token as FTS5's porter tokenizer does."""
    raw = token.encode("utf-8")
    if len(raw) < 3 or len(raw) > _MAX_TOKEN:
        return token
    if token.isascii():
        return _rules(token)
    # FTS5 stems UTF-8 bytes, where every byte of a multi-byte letter is a consonant;
    # latin-1 maps each byte to one code point so the rules see the same sequence.
    return _rules(raw.decode("latin-1")).encode("latin-1").decode("utf-8", "replace")


def _rules(w: str) -> str:
    w = _step1a(w)
    w, removed = _step1b(w)
    if removed:
        w, extended = _step1b2(w)
        if not extended:
            c = w[-1]
            if not _is_vowel(c, False) and c not in "lsz" and len(w) > 1 and c == w[-2]:
                w = w[:-1]
            elif _m_eq1(w) and _o_star(w):
                w = w + "e"
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    w = _apply(w, _STEP2)
    w = _apply(w, _STEP3)
    w = _apply(w, _STEP4)
    if w.endswith("e") and (_m_gt1(w[:-1]) or (_m_eq1(w[:-1]) and not _o_star(w[:-1]))):
        w = w[:-1]
    if len(w) > 1 and w.endswith("ll") and _m_gt1(w[:-1]):
        w = w[:-1]
    return w
