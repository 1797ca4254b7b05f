"""How a time is written for a reader (readable.py): one function, ISO 8601 in UTC to the precision each
surface wants, and the one sentence a time-travel lookup says when it finds nothing. Pure."""

from __future__ import annotations

from perseus_vault_core.contract.readable import date, instant, iso_time, no_version

T = 1_780_470_617_821  # 2026-06-03T07:10:17.821Z


def test_a_time_is_iso_8601_in_utc_to_the_precision_asked() -> None:
    assert iso_time(T) == "2026-06-03T07:10:17.821Z"
    assert iso_time(T, "seconds") == "2026-06-03T07:10:17Z"
    assert iso_time(T, "minutes") == "2026-06-03T07:10Z"  # a transcript's turns, the inspector's timeline
    assert iso_time(T, "date") == date(T) == "2026-06-03"
    assert (
        iso_time(T, "auto") == "2026-06-03T07:10:17.821Z"
        and iso_time(T - 821, "auto") == "2026-06-03T07:10:17Z"
    )
    assert (
        iso_time(float(T), "minutes") == "2026-06-03T07:10Z"
    )  # the timeline's ticks fall between milliseconds


def test_no_time_and_a_time_past_the_calendar_are_none() -> None:
    assert iso_time(None) is None and date(None) == "?"
    assert iso_time(10**20) is None and date(10**20) == "?"
    assert instant(None) == "-" and instant(10**20) == str(10**20)


def test_a_time_a_caller_gave_is_shown_as_given_unless_it_is_milliseconds() -> None:
    assert instant(T) == instant(str(T)) == "2026-06-03T07:10:17.821Z"
    assert instant("2026-06-03T07:10Z") == "2026-06-03T07:10Z"


def test_a_lookup_that_finds_nothing_says_so_in_one_sentence() -> None:
    assert no_version("decision", "db", as_of=1) == (
        "No version of decision/db was believed at 1970-01-01T00:00:00.001Z (1 unix ms)."
    )
    assert no_version("decision", "db", valid_at="2026-01-01") == (
        "No version of decision/db was true in the world at 2026-01-01."
    )
    assert no_version("decision", "db", as_of=str(T), valid_at=T) == (
        f"No version of decision/db was believed at 2026-06-03T07:10:17.821Z ({T} unix ms) to be true at "
        f"2026-06-03T07:10:17.821Z ({T} unix ms)."
    )
    assert no_version("two\nlines", "k", as_of=1).startswith(
        "No version of two\\nlines/k "
    )  # one line whatever a name holds
