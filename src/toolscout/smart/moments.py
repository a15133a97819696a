"""Dates and times as a schema writes them: "3pm" as "15:00", "March 6th" as "2026-03-06".

The extractor finds a date or time in the words; this module reads it and writes it in the form the
parameter asks for, by its JSON Schema `format` (`date`, `date-time`, `time`) or by a pattern its
description shows ("YYYY-MM-DD", "HH:MM", "24-hour", "MM/DD/YYYY"). A parameter that asks for no
form gets the words as written. Relative days ("tomorrow", "next Friday") are counted from `today`;
a date without a year is in `today`'s year. A value the form needs and the words do not give (the
time of a `date-time` when only a day is said) is not made up: the reading fails and the parameter
stays missing.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_CLOCK = re.compile(
    r"\b(?P<h>\d{1,2})(?::(?P<m>\d{2}))?(?::(?P<s>\d{2}))?\s?(?P<ap>[ap])?\.?(?:m\.?)?(?![\w:])|\b(?P<word>noon|midday|midnight)\b",
    re.I,
)


def form_of(format_: str, description: str) -> str | None:
    """The form a parameter asks for: "date", "date-time", "time", a written pattern, or None."""
    if format_ in ("date", "date-time", "time"):
        return format_
    pattern = re.search(
        r"\b(YYYY-MM-DD(?:[T ]HH:MM(?::SS)?)?|MM/DD/YYYY|DD/MM/YYYY|YYYYMMDD|HH:MM(?::SS)?)\b", description
    )
    if pattern:
        return pattern.group(1)
    if re.search(r"\b24-hour\b|\bISO ?8601 time\b", description, re.I):
        return "HH:MM"
    return None


def read_time(text: str) -> tuple[int, int, int] | None:
    """Hours, minutes and seconds of a clock time ("3pm", "15:30", "noon"), or None."""
    m = _CLOCK.search(text)
    if m is None:
        return None
    if m.group("word"):
        return (0, 0, 0) if m.group("word").lower() == "midnight" else (12, 0, 0)
    if m.group("m") is None and m.group("ap") is None:
        return None  # a bare number is no time
    hour, minute, second = int(m.group("h")), int(m.group("m") or 0), int(m.group("s") or 0)
    ap = (m.group("ap") or "").lower()
    if not ap and re.search(r"\b(?:afternoon|evening|night)\b", text, re.I):
        ap = "p"  # "4:30 in the afternoon"
    elif not ap and re.search(r"\bmorning\b", text, re.I):
        ap = "a"
    if ap and not 1 <= hour <= 12:
        return None
    if ap == "p" and hour != 12:
        hour += 12
    elif ap == "a" and hour == 12:
        hour = 0
    if hour > 23 or minute > 59 or second > 59:
        return None
    return hour, minute, second


def read_date(text: str, today: date) -> date | None:
    """The day a date's words name ("2026-03-06", "March 6th", "6 March 2026", "tomorrow", "next Friday")."""
    lowered = text.lower().strip()
    iso = re.search(r"\b(\d{4})[-.](\d{1,2})[-.](\d{1,2})\b", lowered)
    if iso:
        return _day(int(iso.group(1)), int(iso.group(2)), int(iso.group(3)))
    slashed = re.search(r"\b(\d{1,2})/(\d{1,2})/(\d{2,4})\b", lowered)
    if slashed:  # the US order, month first, as most tools' users write it
        year = int(slashed.group(3))
        return _day(year + 2000 if year < 100 else year, int(slashed.group(1)), int(slashed.group(2)))
    shifts = {"today": 0, "tonight": 0, "tomorrow": 1, "yesterday": -1}
    if lowered in shifts:
        return today + timedelta(days=shifts[lowered])
    named = re.search(
        r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?!\d)(?:st|nd|rd|th)?(?:,?\s+(\d{4}))?",
        lowered,
    )
    if named:
        return _day(int(named.group(3) or today.year), _MONTHS.index(named.group(1)) + 1, int(named.group(2)))
    named = re.search(
        r"\b(\d{1,2})(?:st|nd|rd|th)?(?:\s+of)?\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?(?:,?\s+(\d{4}))?",
        lowered,
    )
    if named:
        return _day(int(named.group(3) or today.year), _MONTHS.index(named.group(2)) + 1, int(named.group(1)))
    weekday = re.fullmatch(rf"(?:(next|this|on) )?({'|'.join(_WEEKDAYS)})", lowered)
    if weekday:
        ahead = (_WEEKDAYS.index(weekday.group(2)) - today.weekday()) % 7
        if weekday.group(1) == "next" and ahead == 0:
            ahead = 7
        return today + timedelta(days=ahead)
    return None


def _day(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def written(form: str, day: date | None, clock: tuple[int, int, int] | None) -> str | None:
    """The day and time in `form`, or None when the form needs a part the words did not give."""
    if form in ("date", "YYYY-MM-DD"):
        return day.isoformat() if day else None
    if form == "MM/DD/YYYY":
        return f"{day.month:02d}/{day.day:02d}/{day.year}" if day else None
    if form == "DD/MM/YYYY":
        return f"{day.day:02d}/{day.month:02d}/{day.year}" if day else None
    if form == "YYYYMMDD":
        return day.strftime("%Y%m%d") if day else None
    if form in ("time", "HH:MM:SS"):
        return "{:02d}:{:02d}:{:02d}".format(*clock) if clock else None
    if form == "HH:MM":
        return f"{clock[0]:02d}:{clock[1]:02d}" if clock else None
    if form in ("date-time", "YYYY-MM-DDTHH:MM:SS", "YYYY-MM-DD HH:MM:SS", "YYYY-MM-DDTHH:MM", "YYYY-MM-DD HH:MM"):
        if day is None or clock is None:
            return None
        sep = " " if " " in form else "T"
        seconds = "" if form.endswith("HH:MM") else f":{clock[2]:02d}"
        return f"{day.isoformat()}{sep}{clock[0]:02d}:{clock[1]:02d}{seconds}"
    return None
