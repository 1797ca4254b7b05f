"""The hand-written development sets (benchmarks/data, loaded by benchmarks/devsets.py) keep their shape:
fields, counts, unique ids, answers that exist, dates in the right order, and paraphrase questions that
share no content word with their answers (so the keyword arm alone cannot find them)."""

from __future__ import annotations

import re
from collections import Counter
from datetime import date
from typing import Any

import pytest

from benchmarks import devsets
from perseus_vault_core.primitives.porter import stem

MEMORY_FIELDS = {"category", "key", "content", "valid_from"}
KEY = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
CATEGORY = re.compile(r"[a-z][a-z-]*")
PAIR_FIELDS = {"updates": ("older", "newer"), "paraphrases": ("a", "b"), "distinct": ("a", "b")}
ITEM_FIELDS = {
    "updates": ({"older", "newer", "question", "domain", "split"}, set()),
    "paraphrases": ({"a", "b", "domain", "split"}, set()),
    "distinct": ({"a", "b", "domain", "split"}, {"question_a"}),
}
KINDS = {"attribute", "paraphrase", "current", "howto", "preference", "person", "decision-why", "chat"}
MIN_KINDS = {"paraphrase": 12, "current": 8, "attribute": 10}
MIN_TEAM_CATEGORIES = {
    "decision": 35,
    "fact": 35,
    "runbook": 18,
    "ticket": 18,
    "preference": 15,
    "person": 15,
    "chat": 18,
    "retro": 2,
}

# Function words only: a word left out of this list counts as content, which makes the check stricter.
STOPWORDS = frozenset(
    """
    a about all am an and any are as at be been but by can could did do does for from had has have how
    i if in into is it its just me might must my no not of off on only or our out over own s same
    shall should so t than that the their them then there these they this those to too up us very
    was we were what when where which who whom whose why will with would you your
""".split()
)


def content_stems(text: str) -> set[str]:
    """Lower-cased alphanumeric runs, less stopwords, Porter-stemmed as the keyword index stems them."""
    return {stem(word) for word in re.findall(r"[a-z0-9]+", text.lower()) if word not in STOPWORDS}


@pytest.fixture(scope="module")
def curation() -> dict[str, list[dict[str, Any]]]:
    return devsets.curation()


@pytest.fixture(scope="module")
def team() -> dict[str, list[dict[str, Any]]]:
    return devsets.team_memory()


def _check_memory(memory: dict[str, Any], where: str) -> None:
    assert set(memory) == MEMORY_FIELDS, f"{where}: fields {sorted(memory)}"
    assert CATEGORY.fullmatch(memory["category"]), f"{where}: category {memory['category']!r}"
    assert KEY.fullmatch(memory["key"]), f"{where}: key {memory['key']!r}"
    assert memory["content"].strip() == memory["content"] and memory["content"], f"{where}: content"
    date.fromisoformat(memory["valid_from"])


# --- curation.json ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(PAIR_FIELDS))
def test_curation_items_have_their_fields(curation: dict[str, list[dict[str, Any]]], name: str) -> None:
    required, optional = ITEM_FIELDS[name]
    first, second = PAIR_FIELDS[name]
    assert len(curation[name]) >= 80
    for i, item in enumerate(curation[name]):
        where = f"{name}[{i}]"
        assert required <= set(item) <= required | optional, f"{where}: fields {sorted(item)}"
        _check_memory(item[first], f"{where}.{first}")
        _check_memory(item[second], f"{where}.{second}")
        a, b = item[first], item[second]
        assert (a["category"], a["key"]) != (b["category"], b["key"]), f"{where}: same category and key"
        assert a["content"] != b["content"], f"{where}: identical content"
        for field in ("question", "question_a"):
            if field in item:
                assert item[field].endswith("?") and len(item[field]) > 10, f"{where}: {field}"


def test_curation_has_exactly_the_three_lists(curation: dict[str, list[dict[str, Any]]]) -> None:
    assert set(curation) == set(PAIR_FIELDS)


def test_every_update_is_newer_than_what_it_updates(curation: dict[str, list[dict[str, Any]]]) -> None:
    for i, item in enumerate(curation["updates"]):
        older, newer = (date.fromisoformat(item[side]["valid_from"]) for side in ("older", "newer"))
        assert newer > older, f"updates[{i}]: newer {newer} is not after older {older}"


@pytest.mark.parametrize("name", list(PAIR_FIELDS))
def test_domains_are_varied_balanced_and_in_both_splits(
    curation: dict[str, list[dict[str, Any]]], name: str
) -> None:
    items = curation[name]
    domains = Counter(item["domain"] for item in items)
    assert len(domains) >= 6, domains
    assert max(domains.values()) <= 2 * min(domains.values()), f"unbalanced: {domains}"
    half = (len(items) + 1) // 2
    assert [item["split"] for item in items] == ["dev"] * half + ["check"] * (len(items) - half)
    for split in devsets.SPLITS:
        assert {item["domain"] for item in items if item["split"] == split} == set(domains), split


def test_question_a_leans_to_a(curation: dict[str, list[dict[str, Any]]]) -> None:
    """A question meant for ``a`` shares at least as many content words with it as with ``b`` (catches one
    written for the wrong side; ties are fair, the pair is meant to be hard)."""
    for i, item in enumerate(curation["distinct"]):
        if "question_a" in item:
            asked = content_stems(item["question_a"])
            a, b = (len(asked & content_stems(item[side]["content"])) for side in ("a", "b"))
            assert a >= b, f"distinct[{i}]: {item['question_a']!r} leans to b"


def test_no_single_word_marks_the_newer_memory(curation: dict[str, list[dict[str, Any]]]) -> None:
    """No word (such as 'now' or 'moved') sits in many newer memories and not in their older ones."""
    marks: Counter[str] = Counter()
    for item in curation["updates"]:
        marks.update(content_stems(item["newer"]["content"]) - content_stems(item["older"]["content"]))
    pairs = len(curation["updates"])
    common = {word: n for word, n in marks.items() if n > pairs // 10}
    assert not common, f"words in over a tenth of the newer memories only: {common}"


def test_no_length_or_key_pattern_gives_the_label_away(curation: dict[str, list[dict[str, Any]]]) -> None:
    """The newer memory is not usually the longer one, and no list mostly (or never) reuses key words."""
    updates = curation["updates"]
    longer = sum(len(item["newer"]["content"]) > len(item["older"]["content"]) for item in updates)
    assert 0.3 <= longer / len(updates) <= 0.7, f"newer is longer in {longer} of {len(updates)}"
    for name, (first, second) in PAIR_FIELDS.items():
        items = curation[name]
        shared = sum(bool(set(i[first]["key"].split("-")) & set(i[second]["key"].split("-"))) for i in items)
        assert 0.2 <= shared / len(items) <= 0.7, f"{name}: keys share a word in {shared} of {len(items)}"


def test_every_curation_memory_has_its_own_category_and_key(
    curation: dict[str, list[dict[str, Any]]],
) -> None:
    """So that a whole list can be remembered into one vault without one memory versioning another."""
    names = Counter(
        (m["category"], m["key"])
        for name, sides in PAIR_FIELDS.items()
        for item in curation[name]
        for m in (item[sides[0]], item[sides[1]])
    )
    assert not [n for n, count in names.items() if count > 1], "repeated (category, key)"


def test_a_split_narrows_every_list() -> None:
    whole = devsets.curation()
    dev, check = devsets.curation("dev"), devsets.curation("check")
    for name in PAIR_FIELDS:
        assert dev[name] and check[name]
        assert len(dev[name]) + len(check[name]) == len(whole[name])
        assert {item["split"] for item in dev[name]} == {"dev"}
    with pytest.raises(ValueError, match="split"):
        devsets.curation("test")


# --- team_memory.json ------------------------------------------------------------------------------


def test_team_memories_have_their_fields_and_unique_ids(team: dict[str, list[dict[str, Any]]]) -> None:
    memories = team["memories"]
    assert set(team) == {"memories", "questions"}
    assert len(memories) >= 190
    for m in memories:
        assert {"id"} | MEMORY_FIELDS <= set(m) <= {"id", "topic_path", "summary"} | MEMORY_FIELDS, m["id"]
        _check_memory({k: m[k] for k in MEMORY_FIELDS}, m["id"])
        for field in ("topic_path", "summary"):
            assert field not in m or (isinstance(m[field], str) and m[field]), f"{m['id']}: {field}"
    assert [m["id"] for m in memories] == [f"m{i:03d}" for i in range(1, len(memories) + 1)]
    pairs = Counter((m["category"], m["key"]) for m in memories)
    assert not [p for p, n in pairs.items() if n > 1], "repeated (category, key)"
    dates = [m["valid_from"] for m in memories]
    assert dates == sorted(dates), "memories are listed in the order they were learnt"


def test_team_memory_has_the_mix_of_a_real_one(team: dict[str, list[dict[str, Any]]]) -> None:
    categories = Counter(m["category"] for m in team["memories"])
    short = {c: categories[c] for c, n in MIN_TEAM_CATEGORIES.items() if categories[c] < n}
    assert not short, f"too few: {short}"


def test_questions_name_existing_answers(team: dict[str, list[dict[str, Any]]]) -> None:
    ids = {m["id"] for m in team["memories"]}
    questions = team["questions"]
    assert len(questions) >= 50
    for q in questions:
        assert set(q) <= {"question", "answers", "kind", "outdated"}, q["question"]
        assert q["kind"] in KINDS, q["kind"]
        assert q["answers"] and len(set(q["answers"])) == len(q["answers"]), q["question"]
        assert set(q["answers"]) <= ids, f"unknown answer in {q['question']!r}"
        assert ("outdated" in q) == (q["kind"] == "current"), q["question"]
    kinds = Counter(q["kind"] for q in questions)
    assert all(kinds[kind] >= n for kind, n in MIN_KINDS.items()), kinds
    assert set(kinds) == KINDS, kinds


def test_current_questions_are_answered_by_the_newer_version(team: dict[str, list[dict[str, Any]]]) -> None:
    by_id = {m["id"]: m for m in team["memories"]}
    for q in team["questions"]:
        if q["kind"] != "current":
            continue
        assert q["outdated"] and not set(q["outdated"]) & set(q["answers"]), q["question"]
        latest_old = max(by_id[i]["valid_from"] for i in q["outdated"])
        for answer in q["answers"]:
            assert by_id[answer]["valid_from"] > latest_old, f"{q['question']!r}: {answer} is not newer"


def test_paraphrase_questions_share_no_content_word_with_their_answers(
    team: dict[str, list[dict[str, Any]]],
) -> None:
    by_id = {m["id"]: m for m in team["memories"]}
    overlaps = {}
    for q in team["questions"]:
        if q["kind"] != "paraphrase":
            continue
        asked = content_stems(q["question"])
        for answer in q["answers"]:
            m = by_id[answer]
            held = content_stems(" ".join([m["content"], m.get("summary", ""), m["key"].replace("-", " ")]))
            if asked & held:
                overlaps[f"{q['question']} / {answer}"] = sorted(asked & held)
    assert not overlaps, overlaps


def test_the_stopword_check_finds_a_shared_word() -> None:
    assert content_stems("Who deploys the gateway?") & content_stems("deploying gateway builds")
    assert not content_stems("What is it?")
