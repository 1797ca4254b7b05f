"""``/hygiene``: the memories that weaken a startup block, each with its reasons (``hygiene``).

A report on a large store takes seconds (it weighs every memory against the others), so it is computed
in the background (:mod:`..reports`) and kept until the store's next write; meanwhile the page says so and
reloads itself (a page closed meanwhile leaves its report to be given up, :class:`..reports.Reports`).
``fresh=1`` computes it again.
"""

from __future__ import annotations

from typing import Any

from perseus_vault_core import MAX_LIMIT

from ..layout import (
    Page,
    choice,
    field,
    form,
    memory_link,
    message,
    preview,
    scope_fields,
    table,
    text_input,
    when,
)
from ..markup import Markup, el, join
from ..query import Ask, Context


def render(ctx: Context, ask: Ask) -> Page:
    options = {
        **ask.filters(),
        "limit": ask.number("limit", 100, 1, MAX_LIMIT),
        "min_age_days": ask.number("min_age_days", 7, 0, 1_000_000),
    }
    controls = [
        *scope_fields(ask.scope),
        field("type", text_input("type", ask.text("type"), size_=10)),
        field("category", text_input("category", ask.text("category"), size_=10)),
        field("topic path", text_input("topic_path", ask.text("topic_path"), size_=12)),
        field("never retrieved after (days)", text_input("min_age_days", options["min_age_days"], size_=4)),
        field("show", choice("limit", [(n, n) for n in ("50", "100", "500", "1000")], str(options["limit"]))),
    ]
    key = tuple(sorted(options.items()))
    job = ctx.reports.job(
        key, ctx.stamp(ask.scope), lambda: ctx.vault.hygiene(**options), fresh=ask.flag("fresh")
    )
    head = form(controls, path="/hygiene", submit="Report")
    same = {k: v for k, v in options.items() if k not in ("agent_id", "workspace_hash")}
    if not ctx.reports.wait(
        job
    ):  # reloads without fresh=1, which would start the report again once it is done
        return Page(
            "Hygiene",
            join(
                head,
                el("meta", http_equiv="refresh", content=f"2; url={ask.scope.link('/hygiene', **same)}"),
                message(
                    f"Computing the report ({job.seconds():.0f} s so far); this page reloads itself until it is ready."
                ),
            ),
        )
    error = job.future.exception()
    if error is not None:
        raise error
    age = f"computed in {job.seconds():.1f} s after the store's latest write"
    fresh = el("a", "compute again", href=ask.scope.link("/hygiene", **same, fresh=True))
    return Page(
        "Hygiene", join(head, message([age, " (", fresh, ")."]), _report(ctx, ask, job.future.result()))
    )


def _report(ctx: Context, ask: Ask, r: Any) -> Markup:
    counts = ", ".join(f"{reason} {n:,}" for reason, n in r.counts.items() if n) or "nothing"
    rows = (
        [
            memory_link(ask.scope, i.id, f"{i.category}/{i.key}"),
            ", ".join(
                f"{reason} of #{i.duplicate_of}" if reason.endswith("duplicate") else reason
                for reason in i.reasons
            ),
            memory_link(ask.scope, i.duplicate_of) if i.duplicate_of is not None else "—",
            f"{i.actionability:.2f}",
            str(i.retrieval_count),
            when(i.created_at_ms),
            el("span", preview(i.preview, 140), class_="text"),
        ]
        for i in r.items
    )
    return join(
        message(
            f"{r.total:,} of {r.scanned:,} active memories flagged ({counts}); the "
            f"{len(r.items):,} least actionable first."
        ),
        table(
            ("memory", "reasons", "repeats", "actionability", "retrievals", "created", "content"),
            rows,
            empty="nothing to flag",
        ),
    )
