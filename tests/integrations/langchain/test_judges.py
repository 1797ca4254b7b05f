"""perseus_vault_integrations.langchain.judges: any LangChain chat model as the vault's judge, scripted here with
langchain-core's own fake chat model (a real one answers the same way, in a call per write with candidates)."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_integrations.langchain import ChatModelJudge
from perseus_vault_integrations.langchain.judges import parse

from ...conftest import Clock, FakeEmbedder

DAY_MS = 86_400_000


def test_a_chat_models_verdicts_decide_the_write(tmp_path: Path, clock: Clock) -> None:
    model = FakeListChatModel(responses=['Here you go: {"1": "update"}'])
    with Vault(tmp_path / "v.db", clock=clock, embedder=FakeEmbedder(), judge=ChatModelJudge(model)) as vault:
        old = vault.remember("fact", "region", "Production runs in us-east-1 today.")
        clock.advance(DAY_MS)
        new = vault.remember("fact", "region-now", "Production runs in eu-west-1 today.")
        assert [(s.id, s.relation) for s in new.similar] == [(old.id, "update")]
        assert vault.get_entity(old.id).superseded_by == new.id
        assert vault.recall("where does production run", reinforce=False).items[0].id == new.id


def test_what_the_model_answers_badly_is_left_out() -> None:
    assert parse('{"#3": "Duplicate", "4": "maybe", "99": "update", "x": "related"}', {3, 4}) == {
        3: "duplicate"
    }
    assert parse("I am not sure.", {3}) == {} and parse('{"3": ', {3}) == {} and parse("[1, 2]", {1}) == {}


def test_the_model_is_told_the_memory_and_each_candidate_with_its_date(tmp_path: Path, clock: Clock) -> None:
    model = FakeListChatModel(responses=["{}"])
    judge = ChatModelJudge(model)
    seen: list[str] = []
    original = model.invoke
    object.__setattr__(
        model, "invoke", lambda messages, **kw: (seen.append(messages[1].content), original(messages))[1]
    )
    with Vault(tmp_path / "v.db", clock=clock, embedder=FakeEmbedder(), judge=judge) as vault:
        vault.remember("fact", "region", "Production runs in us-east-1 today.", valid_from_ms="2026-01-10")
        vault.remember(
            "fact", "region-now", "Production runs in eu-west-1 today.", valid_from_ms="2026-02-10"
        )
    assert (
        "New memory (fact/region-now, true from 2026-02-10): Production runs in eu-west-1 today." in seen[0]
    )
    assert "- id 1 (fact/region, true from 2026-01-10): Production runs in us-east-1 today." in seen[0]
    with pytest.raises(InvalidInput, match="LangChain chat model"):
        ChatModelJudge("gpt")  # type: ignore[arg-type]
