"""The embedder contract (embeddings/base.py): the text a memory is embedded by, and the check every
embedder's output passes before it reaches the vault."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pytest

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_core import embeddings as E
from perseus_vault_core.embeddings.base import checked, normalize

from ...conftest import Clock, FakeEmbedder


def test_embedding_text_joins_summary_and_content() -> None:
    assert E.embedding_text("body", None) == "body"
    assert E.embedding_text("body", "Title") == "Title: body"  # the colon says which part is which
    assert E.embedding_text("body", "A title.") == "A title. body"
    assert E.embedding_text("body", "  ") == "body"


def test_a_label_on_a_line_of_its_own_is_embedded_as_a_summary_is() -> None:
    """A turn written with its speaker on a line of its own gets the vector it gets written ``Speaker: text``."""
    assert E.embedding_text("Caroline\nI went to the group.", None) == "Caroline: I went to the group."
    assert E.embedding_text("Caroline\nI went.", None) == E.embedding_text("I went.", "Caroline")
    assert E.embedding_text("Dr. Ada Lovelace\r\nHello\nagain", None) == "Dr. Ada Lovelace: Hello\nagain"
    assert (
        E.embedding_text("Caroline\nI went.", "Session 3") == "Session 3: Caroline\nI went."
    )  # a summary rules
    for text in (
        "caroline\nI went.",
        "Caroline 2\nI went.",
        "Caroline\n\nI went.",
        "One Two Three Four\nx",
        "Caroline\n",
    ):
        assert E.embedding_text(text, None) == text  # not a label alone over text


class _Returns:
    """An embedder that answers every call with the same array."""

    identity = "test:returns"
    dimension = 3

    def __init__(self, out: np.ndarray) -> None:
        self.out = out

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.out


def test_checked_makes_each_row_unit_length() -> None:
    out = checked(_Returns(np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 2.0]])), ["a", "b"])
    assert out.dtype == np.float32 and np.allclose(out, [[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]])


@pytest.mark.parametrize(
    ("out", "said"),
    [
        (np.ones((1, 3)), "shape (1, 3), expected (2, 3)"),
        (np.ones((2, 4)), "shape (2, 4), expected (2, 3)"),
        (np.array([[1.0, np.nan, 0.0], [1.0, 0.0, 0.0]]), "NaN or infinite"),
        (np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]), "zero vector"),
    ],
)
def test_checked_refuses_an_embedder_that_breaks_the_contract(out: np.ndarray, said: str) -> None:
    with pytest.raises(InvalidInput, match=re.escape(said)):
        checked(_Returns(out), ["a", "b"])


def test_normalize_leaves_a_zero_row_zero() -> None:
    out = normalize(np.array([[0.0, 2.0], [0.0, 0.0]]))
    assert np.allclose(out, [[0.0, 1.0], [0.0, 0.0]])


@pytest.mark.parametrize("fault", ["width", "rows", "nan", "zero"])
def test_an_embedder_breaking_its_contract_is_refused(db_path, clock: Clock, fault: str) -> None:  # type: ignore[no-untyped-def]
    from perseus_vault_core import InvalidInput

    class Faulty(FakeEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            out = super().embed(texts)
            if fault == "width":
                return out[:, :5]
            if fault == "rows":
                return out[:-1]
            out[0, 0] = float("nan") if fault == "nan" else out[0, 0]
            return out * 0 if fault == "zero" else out

    with Vault(db_path, clock=clock, embedder=Faulty()) as vault:
        with pytest.raises(InvalidInput, match="embedder"):
            vault.remember_many(
                [
                    {"category": "note", "key": "a", "content": "x"},
                    {"category": "note", "key": "b", "content": "y"},
                ]
            )
        assert vault.stats().entities == 0
