"""Typed spans of a request: what plain words can state as an argument value, and where.

Each span keeps its place in the request, so that two readings of the same characters (a URL and
the host inside it) never both become arguments, and so that the words just before a value can
say which parameter it is for ("timeout of 30", "an album called Rainbow").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolscout.search.text import STOPWORDS, split_identifier, stem

_QUOTED = re.compile(r"\"([^\"\n]{1,400})\"|“([^”\n]{1,400})”|'([^'\n]{1,400})'(?![a-z])|`([^`\n]{1,400})`")
_URL = re.compile(r"\b(?:https?|ftp|wss?)://[^\s<>\"'`]+", re.I)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_FILE_EXT = (
    "txt|md|json|jsonl|yaml|yml|toml|ini|cfg|conf|csv|tsv|xml|html?|css|js|ts|tsx|jsx|py|rb|go|rs|java|c|h|cpp|"
    "sh|sql|log|pdf|docx?|xlsx?|pptx?|png|jpe?g|gif|svg|webp|mp3|mp4|wav|zip|tar|gz|tgz|env|lock"
)
_PATH = re.compile(
    r"(?<![\w/.])(?:~|\.{1,2})?/[\w.\-~/]+|(?<![\w/])[A-Za-z]:\\[\w.\-\\ ]+|"
    rf"(?<![\w/.@-])[\w\-]+(?:/[\w.\-]+)*\.(?:{_FILE_EXT})\b",
    re.I,
)
_IPV4 = r"(?:\d{1,3}\.){3}\d{1,3}"
# Hosts end in a common top-level domain: "time.will" or "e.g" are not hosts.
_TLD = (
    "com|org|net|io|dev|ai|app|edu|gov|mil|int|co|uk|us|ca|au|de|fr|es|it|nl|se|no|ch|jp|cn|in|br|ru|eu|"
    "info|biz|me|tv|xyz|tech|site|online|cloud|local|internal|lan|test|example"
)
_HOST = re.compile(
    rf"(?<![\w@/.-])(?:{_IPV4}|localhost|(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+(?:{_TLD}))(?::\d{{2,5}})?\b", re.I
)
_MONTHS = (
    "jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    "sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_DATE = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}(?:[T ]\d{{2}}:\d{{2}}(?::\d{{2}})?(?:Z|[+-]\d{{2}}:?\d{{2}})?)?\b|"
    rf"\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b|"
    rf"\b(?:{_MONTHS})\.? \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?\b|"
    rf"\b(?:the )?\d{{1,2}}(?:st|nd|rd|th)?(?: of)? (?:{_MONTHS}|(?:this|next) month)(?:,? \d{{4}})?\b|"
    r"\b(?:today|tomorrow|yesterday|tonight)\b|\b(?:the )?\d{1,2}(?:st|nd|rd|th)\b|"
    rf"\b(?:(?:next|this|last) )?(?:{_WEEKDAYS})(?: (?:this|next|last) week)?\b|"
    r"\b(?:next|this|last) (?:week|month|year)\b",
    re.I,
)
_TIME = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?\b|\b\d{1,2}\s?[ap]\.?m\.?(?![a-z])", re.I)
_NUMBER = re.compile(r"(?<![\w.])(?P<n>-?\d+(?:,\d{3})*(?:\.\d+)?)(?![\w.]*\d)(?:\s?(%|[A-Za-z]{1,12}))?")
_KEYVALUE = re.compile(r"\b([A-Za-z_][\w-]{0,40})\s?(?:=|:)\s?(\"[^\"]*\"|'[^']*'|\[[^\]\n]*\]|[^\s,;]+)")
_BOOLEAN = re.compile(r"\b(true|false|yes|no|on|off|enabled?|disabled?)\b", re.I)
# A proper name: capitalised words, inner dots kept ("U.S.A", not a sentence's closing stop), a
# ", CA" after a city, and "of"/"de"/"la" between two words ("Bank of America"); never a lone "I".
_CAPITAL = r"[A-Z0-9][\w'&-]*(?:\.[\w'&-]+)*"
_PROPER = rf"[A-Z][\w'&-]*(?:\.[\w'&-]+)*(?:,? [A-Z][\w'&-]+(?:\.[\w'&-]+)*| (?:of|de|la) {_CAPITAL})*"
_NAMED = re.compile(rf"\b(\w+) (?:called|named|titled|entitled)\s+(\"[^\"]+\"|'[^']+'|{_CAPITAL}(?: {_CAPITAL})*)")
# A preposition and what follows it: a proper name ("to Kuala Lumpur", "by Cameron Crowe", "from
# Anaheim, CA"), a quoted text, or one short lower-case word ("to km").
_AFTER = re.compile(
    r"\b(to|from|into|in|as|by|for|with|on|at|about)\s+"
    rf"(\"[^\"]+\"|{_PROPER}|[a-z]{{1,8}}\b)"
)
# Kinds of value with a shape of their own (a parameter of such a kind is never filled from other words).
TYPED = ("url", "email", "path", "host", "date", "time")
_TRUE = frozenset({"true", "yes", "on", "enable", "enabled"})
# Words after a number that are not its unit ("5 times" is a count, "3 of them" a number alone).
_NOT_UNITS = frozenset({"of", "and", "or", "to", "in", "on", "at", "for", "the", "a", "an", "is", "are", "times", "x"})


def words_of(text: str) -> frozenset[str]:
    """The stemmed words of a name or a text (`maxResults`, `max_results` and "max results" alike)."""
    return frozenset(stem(w) for w in split_identifier(text))


@dataclass(frozen=True)
class Span:
    """A stretch of the request that can be an argument value.

    `kind`: url, email, path, host, date, time, number, unit (a number's), after (the word after a
    preposition: "to km"), quoted, keyvalue, boolean, named or enum;
    `value` the text as an argument; `number`/`unit` for numbers; `flag` for booleans; `key` the
    name written before a `key=value`, the word before "called"/"named", the preposition of an
    `after` span ("from" for a unit), or an enum's parameter.
    """

    kind: str
    text: str
    start: int
    end: int
    value: str | None = None
    number: float | None = None
    unit: str | None = None
    flag: bool | None = None
    key: str | None = None
    enum_value: Any = None


def _strip_tail(text: str) -> str:
    return text.rstrip(".,;:!?)]}'\"")


def find_spans(request: str, enums: Mapping[str, Sequence[Any]] | None = None) -> list[Span]:
    """Every typed span of `request`, and each value of `enums` (parameter -> values) that it names."""
    spans: list[Span] = []
    for m in _URL.finditer(request):
        text = _strip_tail(m.group(0))
        spans.append(Span("url", text, m.start(), m.start() + len(text), value=text))
    for m in _EMAIL.finditer(request):
        spans.append(Span("email", m.group(0), m.start(), m.end(), value=m.group(0)))
    for m in _PATH.finditer(request):
        text = _strip_tail(m.group(0))
        if len(text) > 1 and not _inside(spans, m.start(), m.start() + len(text), ("url", "email")):
            spans.append(Span("path", text, m.start(), m.start() + len(text), value=text))
    for m in _HOST.finditer(request):
        if (not _inside(spans, m.start(), m.end(), ("url", "email", "path")) and not m.group(0)[0].isdigit()) or (
            re.fullmatch(rf"{_IPV4}(?::\d+)?", m.group(0)) and not _inside(spans, m.start(), m.end(), ("url",))
        ):
            spans.append(Span("host", m.group(0), m.start(), m.end(), value=m.group(0)))
    for m in _DATE.finditer(request):
        text = m.group(0)
        start = m.start() + (4 if text[:4].lower() == "the " else 0)  # "the 6th of March": 6th of March
        spans.append(Span("date", request[start : m.end()], start, m.end(), value=request[start : m.end()]))
    for m in _TIME.finditer(request):
        if not _inside(spans, m.start(), m.end(), ("date",)):
            spans.append(Span("time", m.group(0), m.start(), m.end(), value=m.group(0)))
    for m in _QUOTED.finditer(request):
        inner = next(g for g in m.groups() if g is not None)
        spans.append(Span("quoted", inner, m.start(), m.end(), value=inner))
    for m in _KEYVALUE.finditer(request):
        if _inside(spans, m.start(), m.end(), ("url", "time", "date")):
            continue
        value = m.group(2).strip("\"'")
        spans.append(Span("keyvalue", m.group(0), m.start(), m.end(), value=value, key=m.group(1)))
    for m in _NUMBER.finditer(request):  # after the spans that hold digits of their own
        # The number's own characters only: its unit is a span of its own ("5 miles": value and from_unit).
        end = m.end("n")
        if _inside(spans, m.start(), end, TYPED):
            continue
        digits = m.group("n").replace(",", "")
        number = float(digits)
        unit = m.group(2) if m.group(2) and m.group(2).lower() not in _NOT_UNITS else None
        spans.append(Span("number", m.group(0), m.start(), end, value=digits, number=number, unit=unit))
        if unit and unit.isalpha():
            spans.append(Span("unit", unit, m.end() - len(unit), m.end(), value=unit, key="from"))
    for m in _AFTER.finditer(request):
        start = m.start(2)
        if any(s.start <= start < s.end for s in spans if s.kind not in ("unit", "number")):
            continue
        value = m.group(2).strip("\"'")
        if value.lower() in STOPWORDS:  # "on the", "for a": no value
            continue
        spans.append(Span("after", value, start, m.end(), value=value, key=m.group(1).lower()))
    for m in _BOOLEAN.finditer(request):
        spans.append(Span("boolean", m.group(0), m.start(), m.end(), flag=m.group(1).lower() in _TRUE))
    for m in _NAMED.finditer(request):
        value = m.group(2).strip("\"'")
        start = m.start(2)
        spans.append(Span("named", value, start, m.end(), value=value, key=m.group(1)))
    for param, values in (enums or {}).items():
        spans.extend(_enum_spans(request, param, values))
    return spans


def _enum_spans(request: str, param: str, values: Sequence[Any]) -> list[Span]:
    """Where the request names one of a parameter's enum values (as a whole word, any case)."""
    found: list[Span] = []
    for value in values:
        text = str(value)
        if not text.strip() or (isinstance(value, bool)):
            continue
        # Whole words only, and never a digit of a decimal or a time ("2" is not in "4.2" or "2:45").
        for m in re.finditer(rf"(?<![\w.:/-]){re.escape(text)}(?![\w-]|[.:]\d)", request, re.I):
            found.append(Span("enum", m.group(0), m.start(), m.end(), value=text, key=param, enum_value=value))
    return found


def _inside(spans: Sequence[Span], start: int, end: int, kinds: tuple[str, ...]) -> bool:
    return any(s.kind in kinds and s.start <= start and end <= s.end for s in spans)
