"""rlvr's own catalogue: what `rlvr` says to a learner (checker verdicts, panel status lines, figure titles,
warnings, the CLI, the student notebooks' stubs), extracted by Babel and compiled for stdlib gettext (`rlvr.i18n`).

`python -m coursetools messages update` extracts every `_()`, `N_()`, `ngettext()` and `NN_()` of the files that use
them (`sources()`: found, not listed) with Babel's Python extractor, adds the CLI's option help (the comments on the
config dataclasses' fields and their allowed values, read from the code as `rlvr.options` does), merges the template
into `rlvr/locale/<lang>/LC_MESSAGES/rlvr.po` with Babel's Catalog.update (msgmerge semantics) and compiles `rlvr.mo`
beside it. `python -m coursetools messages check` fails on a fuzzy, untranslated or missing entry, a translation whose
`{...}` or `%(...)s` fields differ from the English, and a committed .mo that is not the compiled .po.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import Counter
from pathlib import Path

from rlvr.i18n import LOCALE_DIR, TRANSLATED

from .po import catalogue_text, compiled_mo, counts, course_catalogue, format_fields, merge, read_catalogue, short
from .po import without_dates

SHARED = Path(__file__).resolve().parents[1]  # the folder holding the packages rlvr and coursetools
PACKAGES = ("rlvr", "coursetools")  # whose files may mark words (coursetools.nbfile: the student notebooks' stubs)
DOMAIN = "rlvr"
KEYWORDS = {"_": None, "N_": None, "ngettext": (1, 2), "NN_": (1, 2)}
PRINTF_FIELD = re.compile(r"%(?:\([^)]*\))?[sdr]")  # argparse's fields: %s, %r, %(name)s ("90% of" is none)


def marks_words(path: Path) -> bool:
    """True if the file calls a marker of rlvr.i18n (`_()`, `N_()`, `ngettext()`, `NN_()`) that it imports from
    there, or defines (rlvr/i18n.py itself): a `_` of another origin does not count."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == "i18n":
            own |= {alias.asname or alias.name for alias in node.names}
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in KEYWORDS.keys() & own
        for node in ast.walk(tree)
    )


def sources(shared: Path = SHARED) -> list[str]:
    """The files whose marked words make the catalogue, relative to shared/ (rlvr's first, each package's sorted):
    found by `marks_words`, never listed by hand."""
    paths = [path for package in PACKAGES for path in sorted((Path(shared) / package).rglob("*.py"))]
    return [path.relative_to(shared).as_posix() for path in paths if marks_words(path)]


def po_path(lang: str) -> Path:
    """rlvr/locale/<lang>/LC_MESSAGES/rlvr.po."""
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def option_help() -> list[tuple[str, str, str]]:
    """(text, where, note) of every CLI option help text that comes from the config dataclasses: the comment on a
    field's line and its rule's allowed values."""
    from rlvr.options import field_comments
    from rlvr.sft import SFT_RULES, SFTConfig
    from rlvr.train import RL_RULES, RLConfig

    found = []
    for cls, rules, module in ((SFTConfig, SFT_RULES, "rlvr/sft.py"), (RLConfig, RL_RULES, "rlvr/train.py")):
        for name, comment in field_comments(cls).items():
            found.append((comment, module, f"help of the option --{name.replace('_', '-')} (the comment on its line)"))
        for name, rule in rules.items():
            if not rule.choices:
                found.append((rule.allowed, "rlvr/validation.py", f"allowed values of --{name.replace('_', '-')}"))
    return found


def template():
    """The catalogue template: every marked text of the `sources()`, then the CLI's option help."""
    from babel.messages.catalog import Catalog
    from babel.messages.extract import extract_from_file

    catalog = Catalog(project="rlvr", version="0.1.0", fuzzy=False)
    for relative in sources():
        extracted = extract_from_file("python", str(SHARED / relative), keywords=KEYWORDS, comment_tags=("NOTE:",))
        for line, message, comments, context in extracted:
            catalog.add(message, locations=[(relative, line)], auto_comments=comments, context=context)
    for text, where, note in option_help():
        catalog.add(text, locations=[(where, None)], auto_comments=[note])
    return catalog


def new_catalogue(lang: str):
    """An empty package catalogue for `lang`."""
    header = (
        f"# {lang} translation of what the rlvr package says to a learner.\n"
        "# Extracted and merged by `python -m coursetools messages update`; terms: i18n/zh_CN/GLOSSARY.md."
    )
    return course_catalogue(lang, DOMAIN, "rlvr", header)


def update(lang: str) -> tuple[Path, bool]:
    """Extract, merge into the language's .po and compile its .mo; (the .po path, whether the .po changed)."""
    path = po_path(lang)
    old_text = path.read_text(encoding="utf-8") if path.exists() else ""
    existing = read_catalogue(path, lang) if path.exists() else new_catalogue(lang)
    catalog = merge(template(), existing)
    text = catalogue_text(catalog)
    changed = without_dates(text) != without_dates(old_text)
    path.parent.mkdir(parents=True, exist_ok=True)
    if changed:
        path.write_text(text, encoding="utf-8")
    path.with_suffix(".mo").write_bytes(compiled_mo(read_catalogue(path, lang)))
    return path, changed


def field_problem(english: str | tuple, translation: str | tuple) -> str | None:
    """Why a translation's fields ({name}, %(name)s, %s) differ from the English's (None if they do not)."""
    english = english[0] if isinstance(english, tuple) else english
    for text in translation if isinstance(translation, tuple) else (translation,):
        if Counter(format_fields(text)) != Counter(format_fields(english)):
            return "its {...} fields differ from the English ones"
        if Counter(PRINTF_FIELD.findall(text)) != Counter(PRINTF_FIELD.findall(english)):
            return "its %-fields differ from the English ones"
    return None


def problems(lang: str) -> list[str]:
    """Every problem of one language's package catalogue (empty list when all is well)."""
    path = po_path(lang)
    name = f"rlvr/locale/{lang}/LC_MESSAGES/{path.name}"
    if not path.exists():
        return [f"{name}: missing (run `python -m coursetools messages update`)"]
    catalog = read_catalogue(path, lang)
    found = []
    for message in (m for m in catalog if m.id):
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        if message.fuzzy:
            found.append(f"{name}: fuzzy entry (the English changed): {short(message.id)}")
        elif not all(strings):
            found.append(f"{name}: untranslated entry: {short(message.id)}")
        elif field_problem(message.id, message.string):
            found.append(f"{name}: {field_problem(message.id, message.string)}: {short(message.id)}")
    known = {m.id for m in catalog if m.id}
    found += [
        f"{name}: not in the catalogue (run `python -m coursetools messages update`): {short(m.id)}"
        for m in template()
        if m.id and m.id not in known
    ]
    mo = path.with_suffix(".mo")
    if not mo.exists() or mo.read_bytes() != compiled_mo(catalog):
        found.append(f"{name[:-3]}.mo: not the compiled .po (run `python -m coursetools messages update`)")
    return found


def main(argv: list[str] | None = None) -> int:
    """`python -m coursetools messages update | check [--lang zh_CN]`; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m coursetools messages", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("update", "check"))
    parser.add_argument("--lang", choices=TRANSLATED, action="append", help="a language (default: all)")
    args = parser.parse_args(argv)
    languages = args.lang or list(TRANSLATED)
    if args.command == "update":
        for lang in languages:
            path, changed = update(lang)
            done, fuzzy, untranslated = counts(read_catalogue(path, lang))
            state = "updated" if changed else "unchanged"
            print(
                f"{path.relative_to(SHARED)}: {state}; {done} translated, {fuzzy} fuzzy, {untranslated} "
                "untranslated; .mo compiled"
            )
        return 0
    found = [problem for lang in languages for problem in problems(lang)]
    print("\n".join(found) if found else f"ok: the package catalogues of {', '.join(languages)} are complete.")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
