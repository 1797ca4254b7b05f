"""Query parsing: tokens as FTS5 splits them, stopwords dropped, every word quoted."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from perseus_vault_core.primitives.query import STOPWORDS, is_enumeration, parse, tokenize
from perseus_vault_core.storage.sqlite.keyword import match_expression, quote


def test_tokenize_like_unicode61() -> None:
    assert tokenize("Audit-chain v2.1: SSRF @localhost!") == [
        "audit",
        "chain",
        "v2",
        "1",
        "ssrf",
        "localhost",
    ]
    assert tokenize("snake_case") == ["snake", "case"]
    assert tokenize("Café Zürich") == ["café", "zürich"]
    assert tokenize('NEAR(a b) col:x "q"') == ["near", "a", "b", "col", "x", "q"]


def test_parse_drops_stopwords_and_duplicate_stems() -> None:
    terms = parse("What did we decide about the connecting and connection of replicas?")
    assert terms.words == ("decide", "connecting", "replicas")
    assert terms.stems == ("decid", "connect", "replica")
    assert parse("the of and").empty
    assert parse("*").empty and parse("").empty


def test_enumeration_is_only_blank() -> None:
    assert is_enumeration("") and is_enumeration("  \t")
    assert not is_enumeration("*")


def test_quote_escapes_quotes() -> None:
    assert quote('a"b') == '"a""b"'
    assert match_expression(["billing", "ledger"]) == '"billing" OR "ledger"'


def test_stopwords_are_lower_case_words() -> None:
    assert all(w == w.lower() and w.isalpha() for w in STOPWORDS)


@given(st.text())
def test_match_expression_only_quotes_word_tokens(text: str) -> None:
    words = parse(text).words
    expr = match_expression(list(words))
    for w in words:
        assert '"' not in w and w.strip() == w and w
    if words:
        assert expr.startswith('"') and expr.endswith('"')


def test_verbs_any_question_carries_are_no_keyword_terms() -> None:
    """ "which database does ledger use": "use" would let a memory saying "we use X for Y" outrank the
    one that answers; it is dropped as stopwords are, and a query of only such words matches nothing."""
    assert parse("Which database does ledger use?").words == ("database", "ledger")
    assert parse("what do we use, and using what?").empty
