"""Readers for values whose parameter says what they are: ids, search terms, titles, formulas, units, zones, dates.

Each reader looks at one parameter of a tool's input schema (its name, type, format, enum and
description) and reads from the request the value that kind of parameter takes: a record id after
its noun ("note 1", "#42", "the third item"), the words after a search verb ("search my notes for
eggs"), a text after its label ('titled "groceries" with body milk and eggs'), an arithmetic
expression, a unit ("to kilometers"), a place as an IANA time zone ("in Tokyo"), a date or time in
the form the schema asks for, or an enum value named by its words ("uppercase" for `upper`). Every
reading is a stretch of the request, rewritten only into the schema's own spelling; none is
guessed. The extractor weighs readings against its other spans by the weight each carries.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, cast

from toolscout.search.text import STOPWORDS, split_identifier, stem
from toolscout.smart import moments, places, units


@dataclass(frozen=True)
class Reading:
    """A value read for one parameter: where it stands in the request, the value, and how sure the reader is."""

    param: str
    start: int
    end: int
    text: str
    value: Any
    weight: float


@dataclass(frozen=True)
class ParamSpec:
    """What a reader needs of a parameter: its name, JSON type, format, enum values and description."""

    name: str
    type: str
    format: str
    enum: tuple[Any, ...]
    description: str

    @property
    def words(self) -> list[str]:
        return [w.lower() for w in split_identifier(self.name)]

    @property
    def stems(self) -> frozenset[str]:
        return frozenset(stem(w) for w in self.words)


def spec_of(name: str, raw: Any) -> ParamSpec:
    """A parameter's `ParamSpec`, looking through `anyOf`/`oneOf` with null for its real type and enum."""
    spec = cast(dict[str, Any], raw) if isinstance(raw, dict) else {}
    merged = dict(spec)
    for key in ("anyOf", "oneOf"):
        options = spec.get(key)
        if isinstance(options, list):
            for option in cast(list[Any], options):
                if isinstance(option, dict) and cast(dict[str, Any], option).get("type") != "null":
                    for k, v in cast(dict[str, Any], option).items():
                        merged.setdefault(k, v)
    kind = merged.get("type")
    if isinstance(kind, list):
        kind = next((k for k in cast(list[Any], kind) if k != "null"), "string")
    enum = merged.get("enum")
    return ParamSpec(
        name,
        str(kind or "string"),
        str(merged.get("format") or ""),
        tuple(cast(list[Any], enum)) if isinstance(enum, list) else (),
        str(merged.get("description") or ""),
    )


def readings(request: str, params: Sequence[ParamSpec], today: date) -> list[Reading]:
    """Every reading of `request` for these parameters (a parameter may get several; the extractor picks)."""
    found: list[Reading] = []
    zone_params = [p for p in params if _is_zone(p)]
    found += _zones(request, zone_params)
    unit_params = [p for p in params if _is_unit(p)]
    found += _units(request, unit_params)
    labels = _labels(params)
    for param in params:
        if param in zone_params or param in unit_params:
            continue
        if param.enum:
            found += _enum_words(request, param)
            continue
        form = moments.form_of(param.format, param.description) if param.type == "string" else None
        if form is not None:
            found += _moments(request, param, form, today)
            continue
        if _is_id(param):
            found += _ids(request, param)
        if param.type == "string":
            if _is_expression(param):
                found += _expressions(request, param)
            if _is_query(param):
                found += _search_terms(request, param)
            found += _labelled(request, param, labels)
            found += _quoted_after_name(request, param)
    return found


def _quoted_after_name(request: str, param: ParamSpec) -> list[Reading]:
    """A quoted text right after the parameter's own name ('the keyword "Diwali"', 'user "MisterArcade"')."""
    if not param.words:
        return []
    name = r"\s+".join(re.escape(w) for w in param.words)
    found: list[Reading] = []
    for m in re.finditer(rf"\b{name}s?{_SEPARATOR}", request, re.I):
        quoted = _quoted_at(request, m.end())
        if quoted:
            found.append(Reading(param.name, m.end(), quoted[1], quoted[0], quoted[0], 0.9))
    return found


# --- time zones -------------------------------------------------------------------------------------

_SOURCE = frozenset({"from", "source", "origin", "src", "input", "local", "start"})
_TARGET = frozenset({"to", "target", "destination", "dest", "output", "into", "end"})


def _is_zone(param: ParamSpec) -> bool:
    """A time-zone parameter: named so (`timezone`, `tz`, a time `zone`) or described as an IANA zone."""
    described = param.description.lower()
    words = set(param.words)
    named = bool(words & {"timezone", "tz"}) or ("zone" in words and ("time" in words or "time" in described))
    return param.type == "string" and not param.enum and (named or "iana" in described or "time zone" in described)


def _direction(param: ParamSpec) -> str:
    words = set(param.words)
    return "from" if words & _SOURCE else "to" if words & _TARGET else ""


def _zones(request: str, params: Sequence[ParamSpec]) -> list[Reading]:
    if not params:
        return []
    named = places.places(request)
    found: list[Reading] = []
    if len(params) == 1:
        for i, place in enumerate(named):  # a lone zone parameter: the first place, then the others weaker
            found.append(Reading(params[0].name, place.start, place.end, place.text, place.zone, 0.85 - 0.05 * i))
        return found
    for param in params:
        way = _direction(param)
        for i, place in enumerate(named):
            said = "from" if place.before == "from" else "to" if place.before in ("to", "into") else ""
            # Without a preposition that says, the first place is the source and a later one the target.
            weight = (0.9 if said == way else 0.0) if said and way else 0.7 if (way == "from") == (i == 0) else 0.6
            if weight:
                found.append(Reading(param.name, place.start, place.end, place.text, place.zone, weight))
    return found


# --- units ------------------------------------------------------------------------------------------


def _is_unit(param: ParamSpec) -> bool:
    if param.type != "string":
        return False
    if {"unit", "units", "currency"} & set(param.words):
        return True
    # An enum of units ("celsius", "fahrenheit") is a unit parameter whatever its name.
    return bool(param.enum) and all(units.unit_of(str(v)) is not None for v in param.enum)


_DIMENSION_WORDS = {
    "temperature": "temperature",
    "temp": "temperature",
    "distance": "length",
    "length": "length",
    "height": "length",
    "weight": "mass",
    "mass": "mass",
    "currency": "currency",
    "money": "currency",
    "volume": "volume",
    "speed": "speed",
    "duration": "time",
    "area": "area",
}


def _units(request: str, params: Sequence[ParamSpec]) -> list[Reading]:
    if not params:
        return []
    named = units.mentions(request)
    found: list[Reading] = []
    for param in params:
        way = _direction(param)
        said_words = {w.lower() for w in split_identifier(f"{param.name} {param.description}")}
        dimensions = {_DIMENSION_WORDS[w] for w in said_words if w in _DIMENSION_WORDS}
        for i, mention in enumerate(named):
            if dimensions and mention.unit.dimension not in dimensions:
                continue  # "3 days" is no temperature unit
            value = units.spelled_for(mention.unit, mention.text, param.enum)
            if value is None:
                continue
            if not param.enum and mention.unit.dimension == "currency":
                value = mention.unit.key  # currencies are asked for by their ISO code
            after_number = bool(re.search(r"\d\s?$", request[: mention.start]))
            into = mention.before in ("to", "into", "in", "as", "many", "much")  # "how many km is 26.2 mi"
            said = "to" if into else "from" if after_number or mention.before == "from" else ""
            if way and said:
                weight = 0.92 if way == said else 0.0
            elif way:  # "convert miles to km": the unit before the target is the source; "convert miles" says none
                targets = [m for m in named[i + 1 :] if m.before in ("to", "into", "in", "as")]
                weight = 0.6 if way == "from" and targets else 0.0
            else:  # one unit parameter: "in Celsius" says it, a quantity's own unit only maybe
                weight = 0.85 if into else 0.6 if after_number else 0.0
            if weight:
                found.append(Reading(param.name, mention.start, mention.end, mention.text, value, weight))
    return found


# --- enum values by their words ---------------------------------------------------------------------

_SYNONYMS: dict[str, str] = {
    "ascending": "asc",
    "descending": "desc",
    "increasing": "asc",
    "decreasing": "desc",
    "capital": "upper",
    "capitals": "upper",
    "caps": "upper",
    "small": "lower",
}


def _enum_words(request: str, param: ParamSpec) -> list[Reading]:
    """An enum value named by a word that is the value run together with one of the description's words
    ("uppercase": `upper` + "case"), by its stem ("sorted by names": `name`) or by a common synonym."""
    described = {w.lower() for w in split_identifier(param.description)}
    found: list[Reading] = []
    for m in re.finditer(r"[A-Za-z][A-Za-z_-]*", request):
        word = m.group(0).lower()
        for value in param.enum:
            text = str(value).lower()
            if not text.isalpha() or text == word:
                continue  # the verbatim value is the extractor's own enum span
            rest = word[len(text) :].strip("_-") if word.startswith(text) else ""
            joined = bool(rest) and len(text) >= 4 and rest in described
            same_stem = stem(word) == stem(text) and len(text) >= 3
            synonym = _SYNONYMS.get(word) == text or _SYNONYMS.get(text) == word
            if joined or same_stem or synonym:
                found.append(Reading(param.name, m.start(), m.end(), m.group(0), value, 0.88))
    return found


# --- dates and times --------------------------------------------------------------------------------

_DATE_WORDS = re.compile(
    r"\b\d{4}[-.]\d{1,2}[-.]\d{1,2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\b(?:today|tonight|tomorrow|yesterday)\b|"
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?!\d)(?:st|nd|rd|th)?(?:,?\s+\d{4})?\b|"
    r"\b\d{1,2}(?:st|nd|rd|th)?(?:\s+of)?\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?(?:,?\s+\d{4})?\b|"
    r"\b(?:(?:next|this|on)\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
    re.I,
)
_TIME_WORDS = re.compile(
    r"\b\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?|\s+in\s+the\s+(?:morning|afternoon|evening)|\s+at\s+night)?(?!\w)|\b\d{1,2}\s?[ap]\.?m\.?(?!\w)|\b(?:noon|midday|midnight)\b",
    re.I,
)


def _moments(request: str, param: ParamSpec, form: str, today: date) -> list[Reading]:
    # A date with its year written out says more than a weekday beside it ("next Monday 2023.10.2").
    days = sorted(_DATE_WORDS.finditer(request), key=lambda m: (not re.search(r"\d{4}", m.group(0)), m.start()))
    day_match = days[0] if days else None
    # A clock time in digits says more than "midnight" beside it ("the midnight show at 23:00").
    times = sorted(_TIME_WORDS.finditer(request), key=lambda m: (not re.search(r"\d", m.group(0)), m.start()))
    time_match = times[0] if times else None
    day = moments.read_date(day_match.group(0), today) if day_match else None
    clock = moments.read_time(time_match.group(0)) if time_match else None
    value = moments.written(form, day, clock)
    if value is None:
        return []
    timed = form in ("time", "HH:MM", "HH:MM:SS")
    dated = form in ("date", "YYYY-MM-DD", "MM/DD/YYYY", "DD/MM/YYYY", "YYYYMMDD")
    spans = [m for m in (None if timed else day_match, None if dated else time_match) if m is not None]
    start, end = min(m.start() for m in spans), max(m.end() for m in spans)
    return [Reading(param.name, start, end, request[start:end], value, 0.95)]


# --- record ids -------------------------------------------------------------------------------------

_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


def _is_id(param: ParamSpec) -> bool:
    words = set(param.words)
    # Not `index`: a position may count from 0, and which is not ours to guess.
    return bool(words & {"id", "identifier", "number", "num", "no"}) and param.type in (
        "string",
        "integer",
        "number",
    )


def _ids(request: str, param: ParamSpec) -> list[Reading]:
    """A record's number after its noun ("note 1", "item #42", "id 7") or an ordinal ("the third item")."""
    nouns = {stem(w.lower()) for w in split_identifier(param.description) if len(w) > 2} - {stem(w) for w in STOPWORDS}
    nouns |= {stem(w) for w in param.words if w not in ("id", "number", "num", "no")}
    found: list[Reading] = []
    for m in re.finditer(
        r"(?:(?P<noun>[A-Za-z]+)\s+)?(?:(?:number|no\.?|id)\s*)?#?\s*(?P<n>\d+|[A-Za-z]*\d[\w-]*)(?![\w.:/-])", request
    ):
        token = m.group("n")
        noun = stem((m.group("noun") or "").lower())
        hashed = "#" in m.group(0)
        labelled = bool(re.search(r"(?:number|no\.?|id)\s*#?\s*\S+$", m.group(0), re.I))
        if noun in nouns or hashed or labelled:
            weight = 0.82
        else:
            continue
        if param.type in ("integer", "number"):
            if not token.isdigit():
                continue
            value: Any = int(token)
        else:
            value = token
        found.append(Reading(param.name, m.start("n"), m.end("n"), token, value, weight))
    for m in re.finditer(rf"\bthe\s+({'|'.join(_ORDINALS)})\s+([A-Za-z]+)", request, re.I):
        if stem(m.group(2).lower()) in nouns or m.group(2).lower() in ("one", "item", "entry", "record"):
            number = _ORDINALS.index(m.group(1).lower()) + 1
            value = number if param.type in ("integer", "number") else str(number)
            found.append(Reading(param.name, m.start(1), m.end(1), m.group(1), value, 0.75))
    return found


# --- search terms -----------------------------------------------------------------------------------


def _is_query(param: ParamSpec) -> bool:
    words = set(param.words)
    if words & {"query", "q", "keyword", "keywords", "term", "terms", "search", "needle"}:
        return True
    described = param.description.lower()
    return bool(words & {"text", "pattern", "topic"}) and bool(
        re.search(r"\b(?:look for|search|query|match)", described)
    )


_AFTER_VERB = re.compile(
    r"\b(?:search(?:ing)?|look(?:ing)?|find|grep|query|hunt)\b[^\"'.?!]*?\b(?:for|about|mentioning|containing|matching|with)\s+"
    r"|\b(?:mentioning|containing|matching|mentions?|contains?|that\s+(?:mention|contain)s?)\s+"
    r"|\b(?:look\s+up|search(?:\s+for)?|grep(?:\s+for)?|query)\s+(?!(?:my|the|your|our|all|for|this|that|these|those|it|them|some|any|a|an|function|tool|engine)\b)",
    re.I,
)
_CLAUSE_END = re.compile(
    r"\s+(?:in|on|from|within|inside|under|across|among)\s+(?:my|the|your|our|all|this|these|those)\b|[.?!;]|,\s|\s+(?:please|thanks)\b|\s+and\s+(?:then\s+)?(?:provide|tell|give|show|send|let|also|return|list|get|make|save|print)\b",
    re.I,
)


# A quoted text, closed by the mark that opened it ("Son's" inside backticks stays whole).
_QUOTE_AT = re.compile(r"\"([^\"\n]+)\"|“([^”\n]+)”|'((?:[^'\n]|'(?=\w))+)'(?!\w)|`([^`\n]+)`")
# What a search is for when it is no term: "search for them", "look for this user".
_NO_TERM = re.compile(r"(?:this|that|these|those|them|him|her|it|me|us|one|something|anything)\b", re.I)


def _quoted_at(request: str, start: int) -> tuple[str, int] | None:
    m = _QUOTE_AT.match(request, start)
    return (next(g for g in m.groups() if g is not None), m.end()) if m else None


def _search_terms(request: str, param: ParamSpec) -> list[Reading]:
    found: list[Reading] = []
    has_quotes = _QUOTE_AT.search(request) is not None
    for m in _AFTER_VERB.finditer(request):
        start = m.end()
        quoted = _quoted_at(request, start)
        if quoted:
            found.append(Reading(param.name, start, quoted[1], quoted[0], quoted[0], 0.86))
            continue
        if has_quotes or _NO_TERM.match(request, start):
            continue  # a quoted text elsewhere is likelier the term than these words
        stop = _CLAUSE_END.search(request, start)
        end = stop.start() if stop else len(request)
        text = request[start:end].strip().rstrip(".,;:!?")
        text = re.sub(r"^(?:the\s+(?:word|term|phrase|text)s?|the|a|an|some)\s+", "", text, flags=re.I)
        if text and text.lower() not in STOPWORDS and len(text) <= 200:
            found.append(
                Reading(
                    param.name, end - len(text) if stop else start + request[start:end].find(text), end, text, text, 0.8
                )
            )
    return found


# --- labelled texts ---------------------------------------------------------------------------------

# Words that label a text parameter besides its own name: "titled X" for `title`, "saying X" for `body`.
_LABEL_WORDS: dict[str, tuple[str, ...]] = {
    "title": ("titled", "entitled", "called", "named", "title"),
    "name": ("named", "called", "titled", "name"),
    "body": ("body", "content", "contents", "saying", "text"),
    "content": ("content", "contents", "body", "saying", "text"),
    "text": ("text", "string", "phrase", "words"),
    "message": ("message", "saying", "text"),
    "description": ("description", "described as"),
    "subject": ("subject",),
    "tag": ("tag", "tagged", "label", "labelled", "labeled"),
}
_SEPARATOR = r"(?:\s*[:=]\s*|\s+(?:of|is|as|to|=|(?:should|must|will|shall)\s+be)\s+|\s+)"
_CONNECTOR = r"(?:\s*,?\s*(?:and|with|plus)?\s+(?:a\s+|the\s+)?)"


def _label_words(param: ParamSpec) -> tuple[str, ...]:
    head = param.words[-1] if param.words else ""
    own = " ".join(param.words)
    return tuple(dict.fromkeys((*_LABEL_WORDS.get(head, ()), own, head))) if head in _LABEL_WORDS else ()


def _labels(params: Sequence[ParamSpec]) -> dict[str, tuple[str, ...]]:
    """The label words of each free-text parameter (a title, a name, a body, a message...)."""
    found = {p.name: _label_words(p) for p in params if p.type == "string" and not p.enum}
    return {name: words for name, words in found.items() if words}


# Texts that may run on over "and" and "with" to the end of the request; a title or a name stops there.
_LONG_TEXTS = frozenset({"body", "content", "text", "message", "description"})
_RUN_ON = re.compile(r"\s+(?:and|with|in|for|that|which|to|from|on|at|so|because|but)\s|,\s|\s*\(", re.I)


def _alternatives(words: Sequence[str]) -> str:
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in words)


def _labelled(request: str, param: ParamSpec, labels: Mapping[str, tuple[str, ...]]) -> list[Reading]:
    """A text after its label, quoted or running to the next parameter's label or the clause's end."""
    own = labels.get(param.name)
    if not own:
        return []
    others = [w for name, words in labels.items() if name != param.name for w in words if w not in own]
    found: list[Reading] = []
    label = _alternatives(sorted(own, key=len, reverse=True))
    other = _alternatives(others)
    for m in re.finditer(rf"\b(?:{label})\b{_SEPARATOR}", request, re.I):
        start = m.end()
        quoted = _quoted_at(request, start)
        if quoted:
            found.append(Reading(param.name, start, quoted[1], quoted[0], quoted[0], 0.9))
            continue
        if re.match(
            r"(?:in|on|for|from|with|by|at|into|of|and|or|the|a|an|my|your|this|that|it)\b", request[start:], re.I
        ):
            continue  # "the text in my notes": the label stands as a noun, no value follows
        ends = [len(request)]
        if others:
            after = re.search(rf"{_CONNECTOR}(?:{other})\b", request[start:], re.I)
            if after:
                ends.append(start + after.start())
        stop = re.search(r"[.?!;](?:\s|$)|\n", request[start:])
        if stop:
            ends.append(start + stop.start())
        end = min(ends)
        run_on = _RUN_ON.search(request, start, end)
        if run_on and not (param.words[-1] in _LONG_TEXTS and end == len(request.rstrip(".?! "))):
            end = run_on.start()
        text = request[start:end].strip().rstrip(",").strip("\"'“”")
        if text and len(text) <= 2000:
            found.append(Reading(param.name, start, start + len(text), text, text, 0.78))
    return found


# --- arithmetic -------------------------------------------------------------------------------------


def _is_expression(param: ParamSpec) -> bool:
    words = set(param.words) | {w.lower() for w in split_identifier(param.description)}
    return bool(set(param.words) & {"expression", "expr", "formula", "equation", "calculation", "math"}) or (
        "arithmetic" in words and bool(set(param.words) & {"input", "text", "value"})
    )


_SPOKEN = (
    (r"%\s*of\b", "/ 100 *"),
    (r"\bmultiplied\s+by\b|\btimes\b", "*"),
    (r"\bdivided\s+by\b|\bover\b", "/"),
    (r"\bplus\b", "+"),
    (r"\bminus\b", "-"),
    (r"\bmodulo\b|\bmod\b", "%"),
)
_FORMULA = re.compile(r"(?:[A-Za-z_]\w*\(|[\d(.])[\w\s.+\-*/%^(),]*[\d)a-zA-Z]")


def _expressions(request: str, param: ParamSpec) -> list[Reading]:
    """The longest run of arithmetic in the request ("2+3*4", "sqrt(2) * pi"; "2 plus 3" as "2 + 3")."""
    python = "python" in param.description.lower() or "**" in param.description
    found: list[Reading] = []
    for m in _FORMULA.finditer(request):
        text = m.group(0).strip()
        spoken = text
        for pattern, symbol in _SPOKEN:
            spoken = re.sub(pattern, f" {symbol} ", spoken, flags=re.I)
        spoken = re.sub(r"\bto\s+the\s+power\s+of\b", " ** " if python else " ^ ", spoken, flags=re.I)
        spoken = " ".join(spoken.split())
        # Words that are not function calls or constants end the formula ("2+2 for me").
        while re.search(r"\s[A-Za-z_]\w*$", spoken) and not re.search(r"\b(?:pi|e|tau)$", spoken):
            spoken = re.sub(r"\s+[A-Za-z_]\w*$", "", spoken)
        if not re.search(r"\d|\bpi\b", spoken) or not re.search(r"[+\-*/%^]|\w\(", spoken):
            continue  # a number alone is no expression
        if re.search(r"\b[A-Za-z_]\w+\b(?!\s*\()", re.sub(r"\b(?:pi|e|tau)\b", "", spoken)):
            continue  # words left over: this is prose, not arithmetic
        if python:
            spoken = spoken.replace("^", "**")
        end = m.start() + len(m.group(0).rstrip())
        found.append(
            Reading(param.name, m.start(), end, m.group(0), spoken.replace(" ", "") if " " not in text else spoken, 0.9)
        )
    return found
