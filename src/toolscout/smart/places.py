"""Places to IANA time zones, offline: "Tokyo", "New York", "Asia/Tokyo" and "Japan" all read as a zone.

The index is built from the time-zone database itself (`zoneinfo.available_timezones()`: the
system's database, or the `tzdata` package where the system has none): the city part of every
zone name ("America/New_York" -> "new york"), plus a small table of big cities and countries
that no zone is named after. A country or abbreviation that spans several zones (the United
States, "Central") is left out on purpose: picking one of its zones would be inventing.
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass
from functools import cache

# Cities, countries and abbreviations with one zone that no zone name spells.
_ALIASES: dict[str, str] = {
    "America/Los_Angeles": "san francisco|seattle|portland|san diego|san jose|las vegas|silicon valley|"
    "pacific time|pst|pdt|california",
    "America/New_York": "boston|washington|washington dc|washington d.c.|miami|atlanta|philadelphia|"
    "eastern time|est|edt|pittsburgh|baltimore|orlando|charlotte|nyc",
    "America/Chicago": "dallas|houston|austin|san antonio|minneapolis|new orleans|st. louis|central time|cst|cdt",
    "America/Denver": "salt lake city|albuquerque|mountain time|mst|mdt",
    "America/Toronto": "ottawa",
    "America/Edmonton": "calgary",
    "America/Sao_Paulo": "rio de janeiro|rio|brasilia",
    "America/Argentina/Buenos_Aires": "argentina",
    "America/Bogota": "colombia",
    "America/Lima": "peru",
    "America/Santiago": "chile",
    "Europe/London": "uk|united kingdom|england|britain|great britain|scotland|wales|edinburgh|manchester|"
    "birmingham|liverpool|bst",
    "Europe/Paris": "france|lyon|marseille|cet|cest",
    "Europe/Berlin": "germany|munich|frankfurt|hamburg|cologne",
    "Europe/Madrid": "spain|barcelona|valencia|seville",
    "Europe/Rome": "italy|milan|naples|florence|venice",
    "Europe/Amsterdam": "netherlands|holland|rotterdam|the hague",
    "Europe/Brussels": "belgium",
    "Europe/Zurich": "switzerland|geneva|bern|basel",
    "Europe/Vienna": "austria",
    "Europe/Stockholm": "sweden",
    "Europe/Oslo": "norway",
    "Europe/Copenhagen": "denmark",
    "Europe/Helsinki": "finland",
    "Europe/Warsaw": "poland|krakow",
    "Europe/Prague": "czechia|czech republic",
    "Europe/Budapest": "hungary",
    "Europe/Athens": "greece",
    "Europe/Dublin": "ireland",
    "Europe/Lisbon": "portugal|porto",
    "Europe/Istanbul": "turkey|ankara",
    "Europe/Kyiv": "ukraine",
    "Europe/Moscow": "st. petersburg|saint petersburg",
    "Asia/Tokyo": "japan|osaka|kyoto|yokohama|jst",
    "Asia/Shanghai": "china|beijing|peking|shenzhen|guangzhou",
    "Asia/Hong_Kong": "hk",
    "Asia/Taipei": "taiwan",
    "Asia/Seoul": "south korea|korea|busan|kst",
    "Asia/Kolkata": "india|mumbai|bombay|delhi|new delhi|bangalore|bengaluru|hyderabad|chennai|pune|ist",
    "Asia/Karachi": "pakistan|lahore|islamabad",
    "Asia/Dhaka": "bangladesh",
    "Asia/Bangkok": "thailand",
    "Asia/Ho_Chi_Minh": "vietnam|hanoi|saigon",
    "Asia/Manila": "philippines",
    "Asia/Singapore": "sgt",
    "Asia/Dubai": "uae|united arab emirates|abu dhabi",
    "Asia/Riyadh": "saudi arabia",
    "Asia/Jerusalem": "israel|tel aviv",
    "Asia/Tehran": "iran",
    "Africa/Cairo": "egypt",
    "Africa/Lagos": "nigeria",
    "Africa/Nairobi": "kenya",
    "Africa/Johannesburg": "south africa|cape town|pretoria",
    "Pacific/Auckland": "new zealand|wellington",
    "Pacific/Honolulu": "hawaii",
    "Atlantic/Reykjavik": "iceland",
}
# Zone names that are not places, or whose city word is a common English word.
_NOT_PLACES = frozenset({"easter", "christmas", "center", "wake", "midway", "universal", "zulu", "man", "knox"})
_REGIONS = frozenset(
    {"Africa", "America", "Antarctica", "Arctic", "Asia", "Atlantic", "Australia", "Europe", "Indian", "Pacific"}
)


@cache
def zones() -> frozenset[str]:
    """Every zone name the time-zone database knows (empty when there is no database at all)."""
    try:
        return frozenset(zoneinfo.available_timezones())
    except (OSError, ValueError):  # pragma: no cover - a broken database reads as none
        return frozenset()


@cache
def _index() -> dict[str, str]:
    known = zones()
    index: dict[str, str] = {}
    # Canonical-looking names first (a region, the fewest parts), so a link never shadows its target.
    for zone in sorted(known, key=lambda z: (z.split("/")[0] not in _REGIONS, z.count("/"), z)):
        parts = zone.split("/")
        if len(parts) < 2 or parts[0] not in _REGIONS:
            continue
        city = parts[-1].replace("_", " ").lower()
        if city not in _NOT_PLACES:
            index.setdefault(city, zone)
    for zone, names in _ALIASES.items():
        if zone in known:
            for name in names.split("|"):
                index.setdefault(name, zone)
    for zone in ("UTC", "GMT"):
        if zone in known:
            index[zone.lower()] = zone
    return index


@cache
def _pattern() -> re.Pattern[str]:
    names = sorted(_index(), key=len, reverse=True)
    return re.compile(
        r"(?<![\w/])(?:" + "|".join(re.escape(n).replace(r"\ ", r"\s+") for n in names) + r")(?![\w/])", re.I
    )


_ZONE_NAME = re.compile(r"(?<![\w/])[A-Z][A-Za-z_+-]*(?:/[A-Za-z0-9_+-]+){1,2}(?![\w/])")


def names_a_zone(request: str) -> bool:
    """Whether `request` writes an IANA zone name ("Asia/Tokyo"), not a place in words."""
    known = zones()
    return any(m.group(0) in known for m in _ZONE_NAME.finditer(request))


@dataclass(frozen=True)
class Place:
    """A place the request names, with the zone it reads as and the word just before it ("in", "from")."""

    start: int
    end: int
    text: str
    zone: str
    before: str


def places(request: str) -> list[Place]:
    """The places and zone names in `request`, in order, each with its IANA zone; longest reading first."""
    known = zones()
    found: list[Place] = []
    taken: list[tuple[int, int]] = []
    for m in _ZONE_NAME.finditer(request):
        if m.group(0) in known:
            found.append(Place(m.start(), m.end(), m.group(0), m.group(0), _before(request, m.start())))
            taken.append((m.start(), m.end()))
    for m in _pattern().finditer(request):
        if any(s < m.end() and m.start() < e for s, e in taken):
            continue
        text = m.group(0)
        key = " ".join(text.lower().split())
        # Abbreviations ("EST", "IST") and two-letter names ("UK", "HK") only in capitals.
        if len(key) <= 4 and key not in ("rio", "utc", "gmt") and not text.isupper():
            continue
        found.append(Place(m.start(), m.end(), text, _index()[key], _before(request, m.start())))
    return sorted(found, key=lambda p: p.start)


def _before(request: str, start: int) -> str:
    m = re.search(r"(\w+)\W*$", request[:start])
    return m.group(1).lower() if m else ""
