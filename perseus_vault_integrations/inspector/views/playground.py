"""``/recall``: the recall playground: a query with its mode, filters and knobs, and why each result ranks
where it does.

The query runs twice, neither time reinforcing anything: as asked, and with every re-ranking knob at its
neutral value (no trust, content, recency, startup or validity boost, no diversity quota, no expansion),
the same mode, filters and fusion weights. Side by side for each result: its rank and score as asked, its
rank and score without the knobs, and its rank in each arm that found it (``fts5`` keyword, ``dense``
meaning), so that a user sees which arm found it, what hybrid fusion made of that, and what each knob did.
"""

from __future__ import annotations

from typing import Any

from perseus_vault_core import MAX_LIMIT, RecallResult

from ..layout import (
    Page,
    address,
    checkbox,
    choice,
    field,
    form,
    memory_link,
    message,
    preview,
    scope_fields,
    status_badge,
    table,
    text_input,
)
from ..markup import Markup, el, join
from ..query import Ask, Context

MODES = ("auto", "fts5", "dense", "hybrid")
NEUTRAL: dict[str, Any] = {
    "trust_weight": 0.0,
    "content_weight": 0.0,
    "diversity_halving": 1.0,
    "recency_half_life_secs": None,
    "startup": False,
    "profile": None,
    "expansion": None,
}


def asked(ask: Ask) -> dict[str, Any]:
    """The recall arguments the form asks for (the knobs left empty take the vault's defaults)."""
    options: dict[str, Any] = {
        **ask.filters(),
        "limit": ask.number("limit", 10, 1, MAX_LIMIT),
        "reinforce": False,
        "include_archived": ask.flag("include_archived"),
    }
    mode = ask.pick("mode", MODES, "auto")
    if mode != "auto":
        options["mode"] = mode
    for name in ("as_of_unix_ms", "valid_at_unix_ms"):
        options[name] = ask.instant(name.removesuffix("_unix_ms"))
    min_score = ask.text("min_score")
    options["min_score"] = "auto" if min_score == "auto" else ask.real("min_score")
    for name in ("trust_weight", "content_weight", "diversity_halving", "recency_half_life_secs"):
        value = ask.real(name)
        if value is not None:
            options[name] = value
    options.update(
        startup=ask.flag("startup"),
        profile="validity" if ask.flag("validity") else None,
        expansion=True if ask.flag("expansion") else None,
    )
    keyword, dense = ask.real("keyword_weight"), ask.real("dense_weight")
    if keyword is not None or dense is not None:
        options["fusion"] = {
            "keyword_weight": 0.6 if keyword is None else keyword,
            "dense_weight": 0.4 if dense is None else dense,
        }
    return {k: v for k, v in options.items() if v is not None}


def render(ctx: Context, ask: Ask) -> Page:
    query = ask.text("q")
    controls = [
        field("query", text_input("q", query, placeholder="what to find", size_=40)),
        field("mode", choice("mode", [(m, m) for m in MODES], ask.text("mode") or "auto")),
        field("results", text_input("limit", ask.text("limit") or "10", size_=4)),
        field(
            "min score",
            text_input("min_score", ask.text("min_score"), placeholder="e.g. 0.2 or auto", size_=8),
        ),
        field("as of", text_input("as_of", ask.text("as_of"), placeholder="2026-01-31T09:30Z", size_=18)),
        field("valid at", text_input("valid_at", ask.text("valid_at"), size_=18)),
        *scope_fields(ask.scope),
        field("type", text_input("type", ask.text("type"), size_=10)),
        field("category", text_input("category", ask.text("category"), size_=10)),
        field("topic path", text_input("topic_path", ask.text("topic_path"), size_=12)),
        el(
            "fieldset",
            el("legend", "Knobs (empty: the vault's default)"),
            [
                field(label, text_input(name, ask.text(name), placeholder=hint, size_=6))
                for name, label, hint in (
                    ("trust_weight", "trust", "0.15"),
                    ("content_weight", "content", "0"),
                    ("diversity_halving", "diversity", "1"),
                    ("recency_half_life_secs", "recency half-life s", ""),
                    ("keyword_weight", "keyword weight", "0.6"),
                    ("dense_weight", "dense weight", "0.4"),
                )
            ],
            checkbox("startup", ask.flag("startup"), "startup (actionability)"),
            checkbox("validity", ask.flag("validity"), "validity profile"),
            checkbox("expansion", ask.flag("expansion"), "query expansion"),
            checkbox("include_archived", ask.flag("include_archived"), "archived too"),
        ),
    ]
    if query is None:
        return Page(
            "Recall playground",
            join(
                form(controls, path="/recall", submit="Recall"),
                message(
                    "Type a query: the results show each arm's rank, the fused score, and what the knobs changed."
                ),
            ),
        )
    options = asked(ask)
    knobbed = ctx.vault.recall(query, **options)
    plain = ctx.vault.recall(query, **{**options, **NEUTRAL})
    return Page(
        "Recall playground",
        join(form(controls, path="/recall", submit="Recall"), _results(ask, knobbed, plain)),
    )


def _arms(ranks: dict[str, int]) -> str:
    return ", ".join(f"{arm} #{rank}" for arm, rank in sorted(ranks.items())) or "—"


def _results(ask: Ask, knobbed: RecallResult, plain: RecallResult) -> Markup:
    before = {item.id: (rank, item) for rank, item in enumerate(plain.items, start=1)}
    rows = []
    for rank, item in enumerate(knobbed.items, start=1):
        old = before.get(item.id)
        moved = (
            "new"
            if old is None
            else "="
            if old[0] == rank
            else f"{'↑' if old[0] > rank else '↓'}{abs(old[0] - rank)}"
        )
        extra = [
            f"validity {item.validity.grade} ×{item.validity.multiplier:.2f}" if item.validity else None,
            f"actionability {item.actionability:.2f}" if item.actionability is not None else None,
        ]
        rows.append(
            [
                str(rank),
                f"{item.score:.4f}",
                f"{old[0]} · {old[1].score:.4f}" if old else "—",
                moved,
                _arms(item.ranks),
                "; ".join(e for e in extra if e) or "—",
                el(
                    "div",
                    memory_link(ask.scope, item.id, address(item)),
                    " ",
                    status_badge(item.status),
                    el("div", preview(item.content, 160), class_="text"),
                    class_="hit",
                ),
            ]
        )
    dropped = [item for item in plain.items if item.id not in {i.id for i in knobbed.items}]
    return join(
        message(
            f"{knobbed.total} result(s) by {knobbed.search_mode}"
            + (f", {knobbed.variants} expansion variant(s)" if knobbed.variants else "")
            + "; nothing reinforced."
        ),
        table(
            (
                "rank",
                "score",
                "without knobs: rank · score",
                "moved",
                "arms (rank in each)",
                "re-ranking marks",
                "memory",
            ),
            rows,
            class_="results",
            empty="no memory matches",
        ),
        el(
            "section",
            el("h2", "Without the knobs only"),
            el(
                "ul",
                [
                    el(
                        "li",
                        memory_link(ask.scope, i.id, address(i)),
                        f" rank {before[i.id][0]}, score {i.score:.4f}",
                    )
                    for i in dropped
                ],
            ),
        )
        if dropped
        else None,
    )
