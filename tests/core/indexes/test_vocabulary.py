"""indexes/vocabulary.py: a snapshot's vocabulary packed as sorted UTF-8 terms and looked up by binary
search, every term found whatever its script, and the terms first seen after the load kept beside it."""

from __future__ import annotations

import random

import numpy as np

from perseus_vault_core.indexes.vocabulary import Vocabulary, pack

# Byte order and code point order differ above U+FFFF and for U+E000..U+FFFF; accents, CJK and an emoji.
TERMS = ["zebra", "apple", "é", "eau", "ü", "日本", "\U0001f600", "\ufb01", "a", "ab", "b", "0"]


def loaded(pairs: list[tuple[str, int]]) -> Vocabulary:
    arrays = pack(pairs)
    return Vocabulary(arrays["terms"], arrays["term_offsets"], arrays["term_ids"])


def test_pack_sorts_the_terms_by_their_utf8_bytes() -> None:
    arrays = pack([("b", 1), ("é", 2), ("a", 3)])
    blob = arrays["terms"].tobytes()
    offsets = arrays["term_offsets"].tolist()
    assert offsets == [0, 1, 2, 4]
    assert [blob[offsets[i] : offsets[i + 1]] for i in range(3)] == [b"a", b"b", "é".encode()]
    assert arrays["term_ids"].tolist() == [3, 1, 2] and arrays["term_ids"].dtype == np.int32
    empty = pack([])
    assert len(empty["terms"]) == 0 and empty["term_offsets"].tolist() == [0] and len(empty["term_ids"]) == 0


def test_every_packed_term_is_found_and_no_other() -> None:
    ids = random.Random(1).sample(range(len(TERMS)), len(TERMS))  # 0..n-1, as the keyword index numbers terms
    pairs = list(zip(TERMS, ids))
    vocabulary = loaded(pairs)
    assert len(vocabulary) == len(TERMS)
    for term, tid in pairs:
        assert vocabulary.get(term) == tid, term
        assert vocabulary.get(term) == tid  # remembered after the first look
    for absent in ("", "aa", "zebras", "e", "日", "\U0001f601", "Apple"):
        assert vocabulary.get(absent) is None, absent
    assert sorted(vocabulary.items()) == sorted(pairs)


def test_many_random_terms_round_trip() -> None:
    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyzéüß日本語\U0001f600"
    terms = {"".join(rng.choices(alphabet, k=rng.randint(1, 8))) for _ in range(3000)}
    pairs = [(t, i) for i, t in enumerate(sorted(terms, key=lambda t: rng.random()))]
    vocabulary = loaded(pairs)
    assert all(vocabulary.get(t) == i for t, i in pairs)
    assert vocabulary.get("not-in-it-" * 3) is None


def test_a_new_term_is_added_once_and_a_known_one_keeps_its_id() -> None:
    vocabulary = loaded([("apple", 0), ("pear", 1)])
    assert vocabulary.setdefault("pear", 99) == 1 and len(vocabulary) == 2
    assert vocabulary.setdefault("plum", 2) == 2 and len(vocabulary) == 3
    assert vocabulary.setdefault("plum", 5) == 2 and len(vocabulary) == 3  # added once
    assert vocabulary.get("plum") == 2
    assert sorted(vocabulary.items()) == [("apple", 0), ("pear", 1), ("plum", 2)]
    empty = loaded([])
    assert empty.get("x") is None and empty.setdefault("x", 0) == 0 and list(empty.items()) == [("x", 0)]
