"""Arguments from plain words without an LLM: spans of the request matched to a tool's parameters.

This is smart mode's deterministic parameter mapper. It reads typed spans out of the request (URLs,
e-mail addresses, hosts, paths and file names, numbers with units, dates and times, quoted strings,
`key=value` and `key: value`, booleans, enum values named in the text) and gives each parameter of
the input schema the span that fits it best, by name, type, format and description. It never invents
a value: every argument is a span of the request (or an enum value the request names), and a
required parameter nothing fits is reported in `missing_required` rather than guessed.

Each span keeps its place in the request, so that two readings of the same characters (a URL and the
host inside it) never both become arguments, and so that the words just before a value can say which
parameter it is for ("timeout of 30", "an album called Rainbow").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, cast

from toolscout.search.text import STOPWORDS, split_identifier, stem
from toolscout.smart.moments import form_of
from toolscout.smart.places import names_a_zone
from toolscout.smart.readers import readings, spec_of
from toolscout.smart.units import mentions

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
_EXTENSION = re.compile(rf"\.(?:{_FILE_EXT})$", re.I)
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
_NUMBER = re.compile(r"(?<![\w.{\\])(?P<n>-?\d+(?:,\d{3})*(?:\.\d+)?)(?![\w.]*\d)(?:\s?(%|[A-Za-z]{1,12}))?")
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
    weight: float = 0.0


def _strip_tail(text: str) -> str:
    return text.rstrip(".,;:!?)]}'\"")


# What a tool search reads in place of a value: the kind of thing it is, not its own words (a path
# with an extension names a file, one without names a folder as often as a file: no word for it).
_SEARCH_WORDS = {"url": "url", "email": "email address", "path": "file"}


def search_text(request: str) -> str:
    """The request as a tool search should read it: each URL, email address and file path replaced by
    the words for what it is, a phrase for deleting by the word "delete" (`_IDIOMS`), and words
    added for the kinds of value a tool's description names but the request may not (`_kind_words`).
    A value's own words are arguments, not the task: in "move /srv/log.txt to /srv/old-log.txt",
    `log` twice would outweigh `move` and find a logging tool."""
    # (Only these three kinds: the whole of `find_spans` would cost a smart request far more.)
    spans = sorted(_address_spans(request), key=lambda span: span.start)
    parts: list[str] = []
    at = 0
    for span in spans:
        if span.start < at:  # (inside one already replaced)
            continue
        word = _SEARCH_WORDS[span.kind]
        if span.kind == "path" and not _EXTENSION.search(span.text):
            word = ""
        parts += [request[at : span.start], word]
        at = span.end
    text = _IDIOMS.sub("delete", "".join([*parts, request[at:]]))
    return text + _kind_words(request)


# Phrases that mean "delete" in words no tool's description uses ("get rid of" would otherwise
# read as "get"): a destructive request must find the destructive tool, which is then confirmed.
_IDIOMS = re.compile(r"\b(?:get(?:ting)? rid of|throw(?:ing)? (?:away|out)|do(?:ing)? away with|wipe out)\b", re.I)


# A formula: `*`, `+`, `^` or `%` between operands, `-` or `/` spaced between them (unspaced, they
# are dates: 2026-11-28, 11/28), or a function applied.
_ARITHMETIC = re.compile(r"[\d)]\s*[*+^%]\s*[\d(]|[\d)]\s+[-/]\s+[\d(]|\b(?:sqrt|log|sin|cos|tan|exp)\s*\(", re.I)


def _kind_words(request: str) -> str:
    """Words for the kinds of value the request carries that its own words may not say: the
    dimension of two units it converts between ("celsius into fahrenheit": temperature units),
    "timezone" for an IANA zone name, "arithmetic expression" for a formula."""
    named: dict[str, set[str]] = {}
    counted: set[str] = set()
    for mention in mentions(request):
        named.setdefault(mention.unit.dimension, set()).add(mention.unit.key)
        if re.search(r"\d\s?$", request[: mention.start]):
            counted.add(mention.unit.dimension)
    # Two units of one dimension, one of them a number's, are a conversion; a unit alone is as
    # often a size or a limit ("the first 200 bytes"), and unit words alone ("the hour and minute
    # hands") are no quantity: there the dimension's word would mislead. Money is a currency, not a unit.
    dimensions = [d for d, keys in named.items() if len(keys) > 1 and d in counted]
    words = [d for d in dimensions if d != "currency"]
    if words:
        words.append("units")
    words += [d for d in dimensions if d == "currency"]
    if names_a_zone(request):
        words.append("timezone")
    if _ARITHMETIC.search(request):
        words.append("arithmetic expression")
    return (" " + " ".join(words)) if words else ""


def _address_spans(request: str) -> list[Span]:
    """The URLs, email addresses and file paths of `request` (a path inside a URL or an address is
    theirs), by kind."""
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
    return spans


def find_spans(request: str, enums: Mapping[str, Sequence[Any]] | None = None) -> list[Span]:
    """Every typed span of `request`, and each value of `enums` (parameter -> values) that it names."""
    spans = _address_spans(request)
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


# A pairing of a parameter and a span counts only from this score (see `_score`).
THRESHOLD = 0.5
# Words before a number or a name that tie it to a parameter ("limit 5", "timeout of 30").
_NEAR = 4

# What a parameter's name, format or description says about the kind of value it takes.
_CUES: dict[str, frozenset[str]] = {
    cue: words_of(signs)
    for cue, signs in {
        "url": "url uri link endpoint website webpage page href site",
        "email": "email mail recipient sender address",
        "path": "path file filename filepath dir directory folder document",
        "host": "host hostname domain server target address ip destination",
        "date": "date day when deadline since until start end birthday",
        "time": "time hour clock alarm at",
    }.items()
}
_FORMATS = {
    "uri": "url",
    "url": "url",
    "uri-reference": "url",
    "email": "email",
    "hostname": "host",
    "ipv4": "host",
    "date": "date",
    "date-time": "date",
    "time": "time",
}
# A parameter named only so is a mail recipient ("to" alone; `where_to` is a place).
_MAIL_FIELDS = frozenset({"to", "cc", "bcc"})
# Words that are a unit's or a currency's: a parameter named so takes a number's unit ("5 miles").
_UNITISH = words_of("unit currency")


@dataclass(frozen=True)
class Evidence:
    """Why a parameter got its value: the span's kind and text, and the score of the pairing."""

    kind: str
    text: str
    score: float


@dataclass
class Extraction:
    """What the request says for each parameter: `arguments`, the `missing_required` ones, and why."""

    arguments: dict[str, Any] = field(default_factory=dict[str, Any])
    missing_required: list[str] = field(default_factory=list[str])
    evidence: dict[str, Evidence] = field(default_factory=dict[str, Evidence])


@dataclass(frozen=True)
class _Param:
    name: str
    type: str
    words: frozenset[str]
    described: frozenset[str]
    cues: frozenset[str]
    described_cues: frozenset[str]
    enum: tuple[Any, ...]
    required: bool
    # The parameter asks for a date or time in a set form: only a reading in that form fits it.
    formed: bool = False


def _params(schema: Mapping[str, Any]) -> list[_Param]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return []
    required = schema.get("required")
    needed = {str(r) for r in cast(list[Any], required)} if isinstance(required, list) else set[str]()
    found: list[_Param] = []
    for name, raw in cast(dict[str, Any], properties).items():
        spec = spec_of(str(name), raw)
        kind = spec.type
        name_words = words_of(name)
        described = words_of(spec.description)
        cues = {cue for cue, signs in _CUES.items() if name_words & signs}
        if name_words and name_words <= _MAIL_FIELDS:  # `to`, `cc`: e-mail's own field names
            cues.add("email")
        fmt = _FORMATS.get(spec.format)
        if fmt:
            cues.add(fmt)
        # The description speaks too, more softly ("destination": a host by name, a path by description).
        described_cues = {cue for cue, signs in _CUES.items() if described & signs and cue != "time"} - cues
        found.append(
            _Param(
                str(name),
                str(kind or "string"),
                name_words,
                described - STOPWORDS,
                frozenset(cues),
                frozenset(described_cues),
                spec.enum,
                str(name) in needed,
                kind == "string" and form_of(spec.format, spec.description) is not None,
            )
        )
    return found


def _value(param: _Param, span: Span) -> Any | None:
    """The argument a span gives a parameter without an enum: a `key=value`'s text read as the type."""
    if span.kind == "read":
        return span.enum_value
    return _keyvalue(param, span) if span.kind == "keyvalue" else _coerce(param, span)


def _coerce(param: _Param, span: Span) -> Any | None:
    """The span's value in the parameter's type, or None when it cannot be that type."""
    if param.type in ("integer", "number"):
        return None if span.number is None else _as_number(param, span.number)
    if param.type == "boolean":
        return span.flag
    if param.type in ("string", "null"):
        return span.value
    return None


def _as_number(param: _Param, number: float) -> int | float | None:
    """Return `number` in the parameter's type: a whole number as an int, a fraction only for `number`."""
    if number.is_integer():
        return int(number)
    return number if param.type == "number" else None


def _named_near(param: _Param, span: Span, words: Sequence[tuple[int, str]]) -> bool:
    """Whether one of the parameter's name words stands just before the span (or just after a number)."""
    before = [w for end, w in words if end <= span.start][-_NEAR:]
    after = [w for start, w in words if start >= span.end][:2] if span.kind == "number" else []
    # Only the name's own words: "to" in `where_to` stands before half the values of a request.
    return bool((param.words - STOPWORDS) & {*before, *after})


def _described_near(param: _Param, span: Span, words: Sequence[tuple[int, str]]) -> bool:
    """Whether a word of the parameter's description stands next to the span ("5 pings": count)."""
    before = [w for end, w in words if end <= span.start][-2:]
    after = [w for start, w in words if start >= span.end][:1]
    return bool(param.described & {*before, *after})


def _score(param: _Param, span: Span, words: Sequence[tuple[int, str]]) -> float:
    """How well `span` fits `param`: 1 for `param=value`, 0 for a span it cannot take."""
    if span.kind == "read":  # a reader's value for one parameter, weighed by the reader
        return span.weight if span.key == param.name else 0.0
    if param.formed and span.kind in ("date", "time", "quoted", "named", "after"):
        return 0.0  # "tomorrow" is no `date-time`: left missing rather than given in the wrong form
    if span.kind in ("unit", "after"):
        if param.type != "string" or param.enum or param.cues & set(TYPED):
            return 0.0
        unitish = bool(param.words & _UNITISH)
        if span.kind == "unit":  # a number's unit fills only a unit (or currency) parameter
            return (0.7 if span.key in param.words else 0.6) if unitish else 0.0
        if span.key not in param.words:
            return 0.0
        # A lower-case word after "to" is a unit or code ("to km"), not a place or a verb ("to stay").
        return 0.7 if unitish or (span.value or " ")[0].isupper() or span.text.startswith('"') else 0.0
    if span.kind == "keyvalue":
        return 1.0 if span.key is not None and words_of(span.key) == param.words else 0.0
    if param.enum:
        if span.kind == "enum" and span.key == param.name:
            # A bare number counts only beside the parameter's words ("3 rooms" is no star rating).
            # The name's words alone missed values like SGD's "for 4 people" seats; with the
            # description's words too, fewer values are wrong for almost no exact matches lost.
            if span.text.isdigit() and not (_named_near(param, span, words) or _described_near(param, span, words)):
                return 0.0
            # The longest value named wins: "Premium Economy" over "Economy".
            return 0.9 + min(len(span.text), 50) / 1000
        return 0.0
    if span.kind == "enum":
        return 0.0
    if _coerce(param, span) is None:
        return 0.0
    near = _named_near(param, span, words)
    if param.type == "boolean":
        return 0.85 if near else 0.0
    if param.type in ("integer", "number"):
        unit = span.unit is not None and bool(param.words & words_of(span.unit))
        if near or unit:
            return 0.8
        return 0.65 if _described_near(param, span, words) else 0.45
    if span.kind in param.cues:
        return 0.9 if near else 0.8
    if span.kind in param.described_cues:
        return 0.7
    if span.kind in TYPED and near:
        return 0.75
    if span.kind == "quoted":
        return 0.75 if near else 0.4
    if span.kind == "named" and param.words & words_of(span.key or ""):
        return 0.8
    return 0.0


def extract_arguments(request: str, schema: Mapping[str, Any] | None, *, today: date | None = None) -> Extraction:
    """The arguments `request` states for a tool with this input schema, and the required ones it does not.

    `today`: the day relative dates ("tomorrow", "next Friday") count from; the local date by default."""
    params = _params(schema or {})
    enums = {p.name: p.enum for p in params if p.enum}
    spans = find_spans(request, enums)
    properties = (schema or {}).get("properties")
    specs = (
        [spec_of(str(n), raw) for n, raw in cast(dict[str, Any], properties).items()]
        if isinstance(properties, dict)
        else []
    )
    for read in readings(request, specs, today or date.today()):
        spans.append(
            Span(
                "read",
                read.text,
                read.start,
                read.end,
                value=None,
                key=read.param,
                enum_value=read.value,
                weight=read.weight,
            )
        )
    words = [(m.end(), stem(m.group(0).lower())) for m in re.finditer(r"[A-Za-z][A-Za-z0-9]*", request)]
    pairs: list[tuple[float, int, int]] = []
    for i, param in enumerate(params):
        for j, span in enumerate(spans):
            score = _score(param, span, words)
            if score >= THRESHOLD:
                pairs.append((score, i, j))
    # The lone quoted string of a request goes to the lone required string parameter.
    pairs.extend(_only_choice(params, spans, pairs))
    result = Extraction()
    used_params: set[int] = set()
    used_spans: set[int] = set()
    for score, i, j in sorted(pairs, key=lambda p: (-p[0], p[1], p[2])):
        if i in used_params or any(_overlaps(spans[j], spans[k]) for k in used_spans):
            continue
        param, span = params[i], spans[j]
        value = _enum_value(param, span) if param.enum else _value(param, span)
        if value is None:
            continue
        used_params.add(i)
        used_spans.add(j)
        result.arguments[param.name] = value
        result.evidence[param.name] = Evidence(span.kind, span.text, round(score, 3))
    result.missing_required = [p.name for i, p in enumerate(params) if p.required and i not in used_params]
    return result


def _only_choice(
    params: Sequence[_Param], spans: Sequence[Span], pairs: Iterable[tuple[float, int, int]]
) -> list[tuple[float, int, int]]:
    """Pairings no word ties, made because nothing else could be meant: one value, one parameter."""
    taken = {i for _, i, _ in pairs}
    found: list[tuple[float, int, int]] = []
    open_strings = [
        i for i, p in enumerate(params) if p.required and p.type == "string" and not p.enum and i not in taken
    ]
    # Typed spans reach their parameters by cue; a host is no `city` just because it is alone.
    plain = [j for j, s in enumerate(spans) if s.kind == "quoted"]
    if len(open_strings) == 1 and len(plain) == 1:
        found.append((THRESHOLD, open_strings[0], plain[0]))
    # As many quoted texts as open required strings, and every string parameter open: they go in
    # order ('diff "apples" against "oranges"' for `before` and `after`).
    strings = [i for i, p in enumerate(params) if p.type == "string" and not p.enum]
    if 1 < len(open_strings) == len(plain) and len(strings) == len(open_strings):
        found.extend((THRESHOLD, i, j) for i, j in zip(open_strings, plain, strict=True))
    # The lone number of a request goes to the lone numeric parameter.
    numeric = [i for i, p in enumerate(params) if p.type in ("integer", "number") and i not in taken]
    # A number counting something else ("3 baths") is not the lone number of a `number_of_beds`.
    numbers = [j for j, s in enumerate(spans) if s.kind == "number" and not _counts_other(s, params)]
    if len(numeric) == 1 and len(numbers) == 1 and _coerce(params[numeric[0]], spans[numbers[0]]) is not None:
        found.append((THRESHOLD + 0.05, numeric[0], numbers[0]))
    # Operands: as many numbers as required numeric parameters, none tied to a name, go in order
    # ("add 3 and 4" for `a` and `b`, described as the first and the second number).
    operands = [i for i in numeric if params[i].required]
    plain = [j for j in numbers if spans[j].unit is None]
    if 1 < len(operands) == len(numeric) == len(plain) and all(
        _coerce(params[i], spans[j]) is not None for i, j in zip(operands, plain, strict=True)
    ):
        found.extend((THRESHOLD, i, j) for i, j in zip(operands, plain, strict=True))
    return found


def _counts_other(span: Span, params: Sequence[_Param]) -> bool:
    unit = span.unit
    if unit is None or not unit.isalpha():
        return False
    # "5 miles" with a unit parameter is a quantity and its unit, not a count of something else.
    return not any(words_of(unit) & (p.words | p.described) or p.words & _UNITISH for p in params)


def _overlaps(a: Span, b: Span) -> bool:
    return a.start < b.end and b.start < a.end


def _enum_value(param: _Param, span: Span) -> Any | None:
    if span.kind == "read":
        return span.enum_value
    if span.kind == "keyvalue":
        wanted = (span.value or "").lower()
        return next((v for v in param.enum if str(v).lower() == wanted), None)
    return span.enum_value if span.key == param.name else None


def _keyvalue(param: _Param, span: Span) -> Any | None:
    """A `key=value` written for this parameter, read as its type."""
    text = span.value or ""
    if param.type in ("integer", "number"):
        try:
            return _as_number(param, float(text))
        except ValueError:
            return None
    if param.type == "array":
        return _json_list(text)
    if param.type == "boolean":
        lowered = text.lower()
        return (
            True if lowered in ("true", "yes", "on", "1") else False if lowered in ("false", "no", "off", "0") else None
        )
    return text


def _json_list(text: str) -> list[Any] | None:
    """Read a list written after an array parameter's name (`[1, 2, 3]`) as JSON; None when it is not one."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return cast(list[Any], value) if isinstance(value, list) else None
