"""Tokenizing as FTS5's ``porter unicode61 remove_diacritics 2`` does, in pure Python (bm25.py): against
FTS5 itself, character by character and on whole texts, and equal to the ASCII fast path."""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perseus_vault_core import Vault
from perseus_vault_core.primitives.bm25 import ascii_terms, phrase, terms, unicode_terms, unicode_tokens
from perseus_vault_core.storage.sqlite.keyword import Fts5Tokenizer


@pytest.fixture(scope="module")
def lite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A connection of the SQLite backend: its FTS5 is the reference."""
    with Vault(Path(tmp_path_factory.mktemp("fts5")) / "v.db", embedder=False, keyword_index=False) as vault:
        yield vault.engine.conn()


def _fts5_folds(conn: Any, codes: list[int]) -> dict[int, str | None]:
    """What unicode61 (without porter) makes of each character between two letters: ``None`` when it
    separates them, else the token's middle (``""`` for a character it drops)."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fold USING fts5(c, tokenize='unicode61 remove_diacritics 2')"
    )
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.fold_i USING fts5vocab(temp, fold, 'instance')")
    conn.execute("DELETE FROM temp.fold")
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO temp.fold(rowid, c) VALUES (?, ?)", [(c, f"q{chr(c)}q") for c in codes])
    conn.execute("COMMIT")
    found: dict[int, list[str]] = {}
    for doc, term in conn.execute('SELECT doc, term FROM temp.fold_i ORDER BY doc, "offset"'):
        found.setdefault(int(doc), []).append(term)
    return {c: None if found.get(c) == ["q", "q"] else found[c][0][1:-1] for c in codes}


def _ours(code: int) -> str | None:
    tokens = unicode_tokens(f"q{chr(code)}q")
    return None if tokens == ["q", "q"] else tokens[0][1:-1]


# Old, stable characters in the scripts people write in (any Python's Unicode tables agree on them).
COMMON = [
    *range(0x80, 0x250),
    *range(0x370, 0x530),
    *range(0x1E00, 0x2000),
    *range(0x3040, 0x3100),
    *range(0x4E00, 0x4F00),
    *range(0xAC00, 0xAD00),
    *range(0x600, 0x700),
    *range(0x900, 0x980),
    *range(0x1F600, 0x1F650),
    0x2603,
    0x2764,
]


def test_common_characters_fold_and_separate_as_fts5(lite: Any) -> None:
    expected = _fts5_folds(lite, COMMON)
    assert {c: _ours(c) for c in COMMON} == expected


@pytest.mark.skipif(
    unicodedata.unidata_version != "14.0.0",
    reason="bm25's tables were made with Python 3.11's Unicode 14 (newer characters may differ)",
)
def test_every_character_of_the_first_two_planes_as_fts5(lite: Any) -> None:
    codes = [c for c in range(0x80, 0x20000) if not 0xD800 <= c <= 0xDFFF]
    expected = _fts5_folds(lite, codes)
    wrong = {hex(c): (expected[c], _ours(c)) for c in codes if _ours(c) != expected[c]}
    assert not wrong


def test_latin_diacritics_and_cases(lite: Any) -> None:
    text = "Café naïve Größe ÉCOLE Zürich straße ǖ İstanbul ñandú ﬁ Ω emoji🙂 e\u0301t"
    got, length = unicode_terms([text, None, None])
    assert {
        "cafe",
        "naiv",
        "groß",
        "ecol",
        "zurich",
        "straß",
        "u",
        "istanbul",
        "nandu",
        "ﬁ",
        "ω",
        "emoji🙂",
        "et",
    } == set(got)
    assert (got, length) == Fts5Tokenizer(lite).terms([text, None, None])


WORDS = [
    "billing",
    "connected",
    "connecting",
    "the",
    "café",
    "naïve",
    "Zürich",
    "日本語",
    "straße",
    "ÉCOLE",
    "emoji🙂",
    "résumé",
    "—“quoted”—",
    "Größe",
    "ab\u19b1cd",
    "e-mail",
    "x_y",
    "Ελληνικά",
    "Москва",
    "ąę",
    "données",
    "İ",
    "ﬀ",
    "١٢٣",
    "한국어",
]


def test_whole_texts_weigh_and_count_as_fts5(lite: Any) -> None:
    rng = random.Random(7)
    fts5 = Fts5Tokenizer(lite)
    for _ in range(200):
        columns = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12))) or None for _ in range(3)]
        columns[0] = columns[0] or ""
        assert unicode_terms(columns) == fts5.terms(columns), columns
        assert terms(columns) == fts5.terms(columns), columns


def test_a_query_words_terms_are_fts5s_phrase(lite: Any) -> None:
    fts5 = Fts5Tokenizer(lite)
    for word in WORDS:
        assert phrase(word) == fts5.phrase(word), word


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.none(), st.text(alphabet=st.characters(max_codepoint=127), max_size=60)),
        min_size=3,
        max_size=3,
    )
)
def test_ascii_text_gives_what_the_ascii_path_gives(columns: list[str | None]) -> None:
    columns = [c.replace("\x00", "") if c else c for c in columns]
    assert unicode_terms(columns) == ascii_terms(columns)
    assert terms(columns) == ascii_terms(columns)


def test_separator_only_non_ascii_still_takes_the_ascii_path() -> None:
    columns = ["deploy — rollback “now”", None, "ops"]
    assert ascii_terms(columns) is not None
    assert terms(columns) == unicode_terms(columns)
