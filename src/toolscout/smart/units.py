"""Units of measure by their words: which stretches of a request name a unit, and which unit that is.

A request says "5 miles", "to kilometers", "into Celsius" or "in °F"; a tool's schema wants
`from_unit`/`to_unit` as an enum value ("kilometer", "KM", "metric") or as whatever its description
shows ("a symbol or name, e.g. "mi""). This table knows the spellings of the common units of length,
mass, temperature, time, volume, speed, area, data and currency, so both sides are read as the same unit and the
schema's own spelling is given back. It never invents a unit: a unit is a word the request wrote.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any


@dataclass(frozen=True)
class Unit:
    """One unit: its canonical key, its dimension, and the system it belongs to (metric or imperial)."""

    key: str
    dimension: str
    system: str = ""


# key, dimension, system, spellings (matched case-insensitively unless listed in _CASED).
_TABLE: tuple[tuple[str, str, str, str], ...] = (
    ("m", "length", "metric", "m|meter|meters|metre|metres"),
    ("km", "length", "metric", "km|kms|kilometer|kilometers|kilometre|kilometres"),
    ("cm", "length", "metric", "cm|centimeter|centimeters|centimetre|centimetres"),
    ("mm", "length", "metric", "mm|millimeter|millimeters|millimetre|millimetres"),
    ("mi", "length", "imperial", "mi|mile|miles"),
    ("yd", "length", "imperial", "yd|yds|yard|yards"),
    ("ft", "length", "imperial", "ft|foot|feet"),
    ("in", "length", "imperial", "inch|inches"),
    ("nmi", "length", "", "nmi|nautical mile|nautical miles"),
    ("kg", "mass", "metric", "kg|kgs|kilogram|kilograms|kilo|kilos|kilogramme|kilogrammes"),
    ("g", "mass", "metric", "g|gram|grams|gramme|grammes"),
    ("mg", "mass", "metric", "mg|milligram|milligrams"),
    ("t", "mass", "metric", "tonne|tonnes|metric ton|metric tons"),
    ("lb", "mass", "imperial", "lb|lbs|pound|pounds"),
    ("oz", "mass", "imperial", "oz|ounce|ounces"),
    ("st", "mass", "imperial", "stone|stones"),
    ("C", "temperature", "metric", "c|°c|celsius|centigrade|degc|degrees celsius|degree celsius|deg c"),
    ("F", "temperature", "imperial", "f|°f|fahrenheit|degf|degrees fahrenheit|degree fahrenheit|deg f"),
    ("K", "temperature", "", "k|kelvin|kelvins"),
    ("s", "time", "", "s|sec|secs|second|seconds"),
    ("min", "time", "", "min|mins|minute|minutes"),
    ("h", "time", "", "h|hr|hrs|hour|hours"),
    ("day", "time", "", "day|days"),
    ("week", "time", "", "week|weeks|wk|wks"),
    ("ms", "time", "", "ms|millisecond|milliseconds"),
    ("l", "volume", "metric", "l|liter|liters|litre|litres"),
    ("ml", "volume", "metric", "ml|milliliter|milliliters|millilitre|millilitres"),
    ("gal", "volume", "imperial", "gal|gallon|gallons"),
    ("qt", "volume", "imperial", "qt|quart|quarts"),
    ("pt", "volume", "imperial", "pint|pints"),
    ("cup", "volume", "imperial", "cup|cups"),
    ("floz", "volume", "imperial", "fl oz|fluid ounce|fluid ounces"),
    ("kmh", "speed", "metric", "km/h|kmh|kph|kilometers per hour|kilometres per hour"),
    ("mph", "speed", "imperial", "mph|miles per hour"),
    ("mps", "speed", "metric", "m/s|meters per second|metres per second"),
    ("kn", "speed", "", "knot|knots"),
    ("m2", "area", "metric", "m2|m²|sq m|square meter|square meters|square metre|square metres"),
    ("ft2", "area", "imperial", "ft2|ft²|sq ft|square foot|square feet"),
    ("ha", "area", "metric", "ha|hectare|hectares"),
    ("acre", "area", "imperial", "acre|acres"),
    ("B", "data", "", "b|byte|bytes"),
    ("KB", "data", "", "kb|kilobyte|kilobytes"),
    ("MB", "data", "", "mb|megabyte|megabytes"),
    ("GB", "data", "", "gb|gigabyte|gigabytes"),
    ("TB", "data", "", "tb|terabyte|terabytes"),
    ("KiB", "data", "", "kib|kibibyte|kibibytes"),
    ("MiB", "data", "", "mib|mebibyte|mebibytes"),
    ("GiB", "data", "", "gib|gibibyte|gibibytes"),
    ("USD", "currency", "", "usd|us dollar|us dollars|dollar|dollars|\\$"),
    ("EUR", "currency", "", "eur|euro|euros|€"),
    ("GBP", "currency", "", "gbp|pound sterling|pounds sterling|sterling|£"),
    ("JPY", "currency", "", "jpy|yen|japanese yen|¥"),
    ("CNY", "currency", "", "cny|yuan|renminbi|rmb"),
    ("INR", "currency", "", "inr|rupee|rupees|indian rupees"),
    ("CHF", "currency", "", "chf|swiss franc|swiss francs"),
    ("CAD", "currency", "", "cad|canadian dollar|canadian dollars"),
    ("AUD", "currency", "", "aud|australian dollar|australian dollars"),
)
# One-letter spellings (and "in", a preposition) read as a unit only in these cases, never as words.
_SHORT = frozenset({"m", "g", "c", "f", "k", "s", "h", "l", "b"})
_SYSTEM_WORDS = {"metric": "metric", "si": "metric", "imperial": "imperial", "us": "imperial", "customary": "imperial"}


@cache
def _spellings() -> dict[str, Unit]:
    table: dict[str, Unit] = {}
    for key, dimension, system, spelled in _TABLE:
        unit = Unit(key, dimension, system)
        table[key.lower()] = unit
        for spelling in spelled.replace("\\$", "$").split("|"):
            table.setdefault(spelling.lower(), unit)
    return table


@cache
def _pattern() -> re.Pattern[str]:
    spellings = sorted(_spellings(), key=len, reverse=True)
    alternatives = "|".join(re.escape(s).replace(r"\ ", r"\s+") for s in spellings)
    return re.compile(rf"(?<![\w°/$€£¥])(?:{alternatives})(?![\w/²])", re.I)


def unit_of(text: str) -> Unit | None:
    """The unit a spelling names ("Kilometres", "°F", "km"), or None."""
    cleaned = " ".join(text.strip().lower().removeprefix("degrees ").removesuffix(".").split())
    return _spellings().get(cleaned) or _spellings().get(text.strip().lower())


@dataclass(frozen=True)
class Mention:
    """Where a request names a unit: its characters, the unit, and the word just before it."""

    start: int
    end: int
    text: str
    unit: Unit
    before: str


def mentions(request: str) -> list[Mention]:
    """Every unit the request names, in order; one-letter units count only after a number or a preposition."""
    found: list[Mention] = []
    for m in _pattern().finditer(request):
        text = m.group(0)
        unit = unit_of(text)
        if unit is None:
            continue
        head = request[: m.start()].rstrip()
        before = re.search(r"([\w°$€£¥]+)\W*$", head)
        word = before.group(1).lower() if before else ""
        short = text.lower() in _SHORT or len(text) <= 2
        # "a", "in", "m" are also words: a short spelling is a unit only after a number or "to"/"in"/"into".
        if short and not (
            re.search(r"\d\s?$", request[: m.start()]) or word in ("to", "into", "in", "from", "as", "many", "much")
        ):
            continue
        if short and text.islower() and len(text) == 1 and not re.search(r"\d\s?$", request[: m.start()]):
            continue  # "to f" is rarely meant; "to F" and "5 f" are
        found.append(Mention(m.start(), m.end(), text, unit, word))
    return found


def spelled_for(unit: Unit, text: str, enum: Sequence[Any]) -> Any | None:
    """The value an enum gives this unit (its key, any spelling, or its system), or `text` without an enum."""
    if not enum:
        return text
    for value in enum:
        named = unit_of(str(value))
        if named is not None and named.key == unit.key:
            return value
    for value in enum:
        if unit.system and _SYSTEM_WORDS.get(str(value).lower()) == unit.system:
            return value
    return None
