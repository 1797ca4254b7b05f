"""The Python Porter stemmer must produce exactly the terms FTS5's porter tokenizer stores."""

from __future__ import annotations

import json
import re

import sqlean

from perseus_vault_core.primitives.porter import stem

from ...conftest import shared_data

SAMPLES = """caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated troubled sized
hopping tanned falling hissing fizzed failing filing happy sky relational conditional rational valenci hesitanci
digitizer conformabli radicalli differentli vileli analogousli vietnamization predication operator feudalism
decisiveness hopefulness callousness formaliti sensitiviti sensibiliti triplicate formative formalize
electriciti electrical hopeful goodness revival allowance inference airliner gyroscopic adjustable defensible
irritant replacement adjustment dependent adoption homologou communism activate angulariti homologous effective
bowdlerize probate rate cease controll roll generalizations oscillators ing ed s ss y yy connect connected
connecting connection connections connective connector connectivity a ab abc x1 2024 v2 ieee802 agreement""".split()


def fts5_terms(words: list[str]) -> list[str]:
    conn = sqlean.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    out = []
    for start in range(0, len(words), 2000):
        chunk = words[start : start + 2000]
        conn.execute("DELETE FROM t")
        conn.execute("INSERT INTO t(rowid, x) VALUES (1, ?)", (" ".join(chunk),))
        out += [row[0] for row in conn.execute("SELECT term FROM v ORDER BY offset")]
    return out


def test_classic_samples_match_fts5() -> None:
    assert [stem(w) for w in SAMPLES] == fts5_terms(SAMPLES)


def test_every_word_of_the_evaluation_corpora_matches_fts5() -> None:
    words: set[str] = set()
    data = shared_data("scifact", "cranfield")
    for name in ("scifact", "cranfield"):
        with open(data / name / "corpus.jsonl", encoding="utf-8") as handle:
            for line in handle:
                doc = json.loads(line)
                words.update(w.lower() for w in re.findall(r"[A-Za-z0-9]+", f"{doc['title']} {doc['text']}"))
    ordered = sorted(words)
    assert len(ordered) > 30_000
    mismatches = [(w, s, f) for w, s, f in zip(ordered, map(stem, ordered), fts5_terms(ordered)) if s != f]
    assert mismatches == []


def test_long_and_short_tokens_pass_through() -> None:
    long = "x" * 65 + "ing"
    assert stem(long) == long
    assert stem("is") == "is"


def test_stemming_keeps_a_tokens_first_letter() -> None:
    """The keyword index's queued replay skips stemming tokens whose first letter no query word has
    (indexes/keyword.py): every rule replaces a suffix and leaves a non-empty stem before it."""
    import itertools

    letters = "aeiouybcdlmnrstz"
    short = ["".join(p) for n in (3, 4) for p in itertools.product(letters, repeat=n)]  # every rule's edge
    for token in (
        SAMPLES + short + [w + s for w in ("ies", "sses", "y", "e", "a") for s in ("", "s", "ing", "ed")]
    ):
        if len(token) >= 3:
            assert stem(token)[0] == token[0], token
