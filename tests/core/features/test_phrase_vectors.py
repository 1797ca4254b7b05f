"""Trigger-phrase vectors are each scope's own (storage/base.py, features/proactive.py): whether another scope stored a
phrase changes neither what a tenant's ``remember`` costs nor what its triggers match by.

When every scope shared one vector per phrase, a ``remember`` whose phrase another tenant had stored skipped embedding
it and ran measurably faster (20.8 against 32.5 ms median with the bundled model, on a file shared by scopes), which
told a tenant which phrases another uses; and the first tenant to store a phrase's vector decided it for all. The
timed test is the one place the suite measures time: many interleaved calls, a ratio of medians, a generous bound."""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perseus_vault_core import Vault
from perseus_vault_core.primitives.scopes import scope_key

from ...conftest import Clock, FakeEmbedder

pytestmark = pytest.mark.both_backends  # the contract suite: SQLite and PostgreSQL (tests/conftest.py)

CAROL = {"agent_id": "carol", "workspace_hash": "ws-c"}
BOB = {"agent_id": "bob", "workspace_hash": "ws-b"}


def _stored(vault: Vault) -> dict[tuple[str, str], np.ndarray]:
    return vault.engine.read(
        lambda c: {
            (s, p): np.frombuffer(bytes(e), dtype=np.float32)
            for s, p, e in c.execute("SELECT scope, phrase, embedding FROM trigger_vectors")
        }
    )


def test_a_phrase_another_scope_stored_is_embedded_and_kept_again(
    dense_vault: Vault, fake_embedder: FakeEmbedder
) -> None:
    dense_vault.remember("fact", "deploy", "carol deploys on fridays", recall_when=["deploy window"], **CAROL)
    before = fake_embedder.texts
    dense_vault.remember("fact", "deploy", "bob deploys on mondays", recall_when=["deploy window"], **BOB)
    assert fake_embedder.texts - before == 2  # the content and the phrase, as if nobody had stored it
    before = fake_embedder.texts
    dense_vault.remember("fact", "release", "bob releases on tuesdays", recall_when=["release train"], **BOB)
    assert fake_embedder.texts - before == 2  # a phrase nobody stored: the same work
    before = fake_embedder.texts
    dense_vault.remember("fact", "rollout", "bob rolls out slowly", recall_when=["release train"], **BOB)
    assert fake_embedder.texts - before == 1  # its own scope has it: only the content
    stored = _stored(dense_vault)
    assert set(stored) == {
        (scope_key(**CAROL), "deploy window"),
        (scope_key(**BOB), "deploy window"),
        (scope_key(**BOB), "release train"),
    }


def test_another_scopes_vector_of_a_phrase_never_changes_what_a_tenant_matches(
    dense_vault: Vault, fake_embedder: FakeEmbedder
) -> None:
    """Carol's scope keeps a vector of its own for a phrase bob uses too (a bound role may write its scope's, whatever
    it holds): bob's triggers still match by bob's, which is the model's embedding of the phrase."""
    dense_vault.remember("fact", "deploy", "bob deploys on mondays", recall_when=["deploy window"], **BOB)
    dense_vault.remember("fact", "deploy", "carol deploys on fridays", recall_when=["deploy window"], **CAROL)
    backend, model = dense_vault.engine.backend, fake_embedder.identity
    skewed = {(scope_key(**CAROL), "deploy window"): fake_embedder.embed(["something else entirely"])[0]}
    dense_vault.engine.write(lambda c: backend.vectors.write_phrase_vectors(c, model, skewed))
    dense_vault.engine.trigger_vectors.clear()  # as a process that has not read them yet
    found = dense_vault.recall_when("the deploy window opens", min_similarity=0.0, **BOB).items
    assert [i.key for i in found] == ["deploy"] and found[0].match == "phrase"
    own = _stored(dense_vault)[(scope_key(**BOB), "deploy window")]
    assert np.array_equal(own, fake_embedder.embed(["deploy window"])[0])
    by_meaning = dense_vault.recall_when("a window opens", min_similarity=0.0, **BOB).items  # one word of two
    cosine = float(
        np.dot(fake_embedder.embed(["a window opens"])[0].astype(np.float64), own.astype(np.float64))
    )
    assert [i.match for i in by_meaning] == ["meaning"] and by_meaning[0].score == pytest.approx(
        round(0.7 * cosine, 6)
    )


def test_a_purge_forgets_its_scopes_vectors_only(dense_vault: Vault) -> None:
    carol = dense_vault.remember(
        "fact", "deploy", "carol deploys", recall_when=["deploy window", "carol only"], **CAROL
    )
    dense_vault.remember("fact", "deploy", "bob deploys", recall_when=["deploy window"], **BOB)
    dense_vault.forget(carol.id, **CAROL)
    dense_vault.purge(carol.id, **CAROL)
    assert set(_stored(dense_vault)) == {(scope_key(**BOB), "deploy window")}


@pytest.mark.slow
def test_a_phrase_another_scope_stored_makes_no_remember_faster(
    vault_path: str | Path, clock: Clock, real_embedder: Any
) -> None:
    """The bundled model embeds; bob remembers memories whose phrase carol stored before, and memories whose phrase
    nobody stored, in turns (the order alternating): the ratio of the two medians stays near 1. Sharing one vector per
    phrase made it about 0.64."""
    trials, warmup = 30, 4
    words = (
        "apple river garden window market silver forest bridge castle planet rocket pencil doctor island camera "
        "engine butter winter summer valley desert harbor candle mirror ticket basket jacket carpet dinner letter "
        "number office orange people garage button cotton copper marble spring sunset violin wallet yellow "
        "anchor banana barrel bottle cabin canvas circle coffee collar cookie corner cousin dragon feather finger "
        "flower frozen guitar hammer helmet kettle ladder lemon magnet"
    ).split()
    pairs = list(zip(words[0::2], words[1::2]))[: trials + warmup]
    assert len(pairs) == trials + warmup
    # In each pair one word's phrase is stored by carol first and the other's by nobody, taking turns, so that any
    # difference between the words themselves falls on both sides alike.
    known = [p[i % 2] for i, p in enumerate(pairs)]

    def phrase(
        word: str,
    ) -> str:  # longer than the memory itself, as trigger phrases often are: embedding it shows
        return f"when someone starts deploying the {word} service to the production cluster in the weekly release"

    fresh = [p[1 - i % 2] for i, p in enumerate(pairs)]
    with Vault(vault_path, clock=clock, embedder=real_embedder) as vault:
        vault.remember_many(
            [
                {
                    "category": "fact",
                    "key": f"c{i}",
                    "content": f"carol runs the {w} service",
                    "recall_when": [phrase(w)],
                    **CAROL,
                }
                for i, w in enumerate(known)
            ]
        )
        times: dict[str, list[float]] = {"known": [], "fresh": []}
        for i in range(trials + warmup):
            turns = [("known", known[i]), ("fresh", fresh[i])]
            for kind, w in turns if i % 4 < 2 else reversed(turns):
                started = time.perf_counter()
                vault.remember(
                    "fact",
                    f"{kind}{i}",
                    f"bob runs the {pairs[i][0]} service ({kind})",
                    recall_when=[phrase(w)],
                    **BOB,
                )
                if i >= warmup:
                    times[kind].append(time.perf_counter() - started)
    ratio = statistics.median(times["known"]) / statistics.median(times["fresh"])
    assert 0.8 <= ratio <= 1.25, f"median known/fresh = {ratio:.2f}"
