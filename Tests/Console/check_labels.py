"""Every label the console uses has words in English and in German, and both
languages have the same labels: a missing one would show as its key.

    python check_labels.py Services/Edge/Library/Resources/Console

Keys are found as string literals of the console's namespaces anywhere in its
modules (so `t(saved ? "post.saved" : "post.save")` counts both), plus the
template keys (`t(`kind.${kind}`)`) expanded with the values the code gives them.
"""
import json
import pathlib
import re
import sys

# Keys built from a template, with every value the console fills in.
TEMPLATES = {
    "page": ["search", "post", "edit", "favourites", "chat", "divers", "trips", "tips", "sights", "country", "operator"],
    "kind": ["offer", "restaurant", "sight", "tip"],
    "sort": ["distance", "title", "-title", "newest", "rating"],
    "open": ["open", "closes_soon", "closed", "opens_soon", "unknown", "open_end"],
    "problem": ["radius", "lat", "lon", "place", "hours", "timezone", "title", "text", "email", "password", "q", "kinds", "price", "tags", "stars"],
    "error": ["bad_request", "invalid_argument", "unauthenticated", "permission_denied", "not_found", "already_exists",
              "conflict", "too_large", "rate_limited", "unavailable", "internal"],
    "language": ["en", "de"],
    "attribute": ["certification", "dives", "years"],
    "trips.role": ["owner", "member"],
    "sights": ["entered", "exited"],
    "operator": ["service", "answering", "ready", "version", "uptime", "roundTrip", "memory", "sqlite", "free",
                 "when", "request", "status", "code", "detail", "requestId"],
}


def dictionaries(source):
    """The `messages` object of i18n.js: each language's keys."""
    languages = {}
    for language, body in re.findall(r"^  (\w+): \{\n(.*?)\n  \},", source, re.S | re.M):
        languages[language] = set(re.findall(r'^    "?([\w.\-]+)"?:', body, re.M))
    return languages


def main(directory):
    root = pathlib.Path(directory)
    languages = dictionaries((root / "i18n.js").read_text())
    problems = []
    if set(languages) != {"en", "de"}:
        problems.append(f"expected English and German words, found {sorted(languages)}")
    namespaces = {key.split(".")[0] for words in languages.values() for key in words if "." in key}
    used = set()
    for module in sorted(root.rglob("*.js")):
        if module.name == "i18n.js":
            continue
        text = module.read_text()
        for literal in re.findall(r'"([a-z]+\.[\w.\-]+)"', text):
            if literal.split(".")[0] in namespaces and not literal.endswith(".js"):
                used.add(literal)
        used.update(re.findall(r'\bt\("(\w+)"', text))
        for template in re.findall(r"\bt\(`([\w.]+)\.\$\{", text):
            if template not in TEMPLATES:
                problems.append(f"{module.name}: the template key {template}.${{…}} has no values listed in check_labels.py")
    for template, values in TEMPLATES.items():
        used.update(f"{template}.{value}" for value in values)
    for language, words in sorted(languages.items()):
        for key in sorted(used - words):
            problems.append(f"{language}: no words for {key}")
    for key in sorted(languages.get("en", set()) ^ languages.get("de", set())):
        problems.append(f"only one language has {key}")
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(f"console labels: {len(used)} used, each in {', '.join(sorted(languages))}")


if __name__ == "__main__":
    main(sys.argv[1])
