"""gettext catalogues (.po) with Babel, as the course keeps them: read with the previous English of a fuzzy entry,
written unwrapped in reading order, merged with msgmerge's semantics, counted, and the `{...}` fields a translation
must keep. A leaf: the translator (`coursetools.translate`) and rlvr's catalogue (`coursetools.messages`) share it."""

from __future__ import annotations

import io
import re

from rlvr.i18n import TRANSLATED

DEFAULT_LANGUAGE = TRANSLATED[0]  # the language of a catalogue read without naming one
PO_WIDTH = 100_000  # no wrapping (msgmerge --no-wrap): a msgid's lines are its English lines, `#| msgid` one line


def read_catalogue(path, lang: str = DEFAULT_LANGUAGE):
    """A .po file as a Babel Catalog, with the previous msgids of its fuzzy entries (see `restore_previous_ids`)."""
    from babel.messages.pofile import read_po

    with open(path, "rb") as handle:
        return restore_previous_ids(read_po(handle, locale=lang, abort_invalid=True))


def restore_previous_ids(catalog):
    """Babel's reader keeps a `#| msgid "..."` line as a translator comment '| msgid "..."'; turn it back into the
    fuzzy entry's previous_id (and drop it from an entry that is no longer fuzzy, as msgmerge does)."""
    from babel.messages.pofile import unescape

    for message in catalog:
        previous = [c[1:].strip() for c in message.user_comments if c.startswith("|")]
        if not previous:
            continue
        message.user_comments = [c for c in message.user_comments if not c.startswith("|")]
        if message.fuzzy and previous[0].startswith("msgid "):
            quoted = re.findall(r'"(?:[^"\\]|\\.)*"', " ".join(previous)[len("msgid ") :])
            message.previous_id = ["".join(unescape(part) for part in quoted)]
    return catalog


def catalogue_text(catalog) -> str:
    """A catalogue as .po text (Babel's writer, previous msgids of fuzzy entries kept, reading order, no wrapping:
    Babel wraps a long `#| msgid` as a comment, breaking its strings, so nothing is wrapped)."""
    from babel.messages.pofile import write_po

    buffer = io.BytesIO()
    write_po(buffer, catalog, width=PO_WIDTH, sort_output=False, include_previous=True, ignore_obsolete=False)
    return buffer.getvalue().decode("utf-8")


def course_catalogue(lang: str, domain: str, project: str, header_comment: str):
    """An empty Babel catalogue with the course's translation team and contact (the package's and each notebook's)."""
    from datetime import datetime, timezone

    from babel.messages.catalog import Catalog

    return Catalog(
        locale=lang,
        domain=domain,
        header_comment=header_comment,
        project=project,
        version="0.1.0",
        msgid_bugs_address="the course's issue tracker",
        last_translator="rlvr course translators",
        language_team=f"{lang} (i18n/{lang}/GLOSSARY.md)",
        revision_date=datetime.now(timezone.utc),
        fuzzy=False,
    )


def merge(template, catalog):
    """`catalog` after folding in a template (msgmerge semantics, by Babel's Catalog.update): an obsolete entry
    (`#~`) whose English is back in the template comes back with its translation, as msgmerge does (Babel's update
    alone would leave it obsolete)."""
    for key, message in list(catalog.obsolete.items()):
        if key in template and key not in catalog:
            catalog[message.id] = message
            del catalog.obsolete[key]
    catalog.update(template, no_fuzzy_matching=False, update_header_comment=False, update_creation_date=False)
    return catalog


def without_dates(text: str) -> str:
    """A .po text without its creation and revision dates (so rewriting an unchanged catalogue changes nothing)."""
    return re.sub(r'^"(POT-Creation-Date|PO-Revision-Date): .*\\n"\n', "", text, flags=re.M)


def _strings(message) -> tuple:
    """A message's translations (one, or one per plural form)."""
    return message.string if isinstance(message.string, tuple) else (message.string,)


def compiled_mo(catalog) -> bytes:
    """The .mo bytes of a catalogue (fuzzy entries left out, as msgfmt does)."""
    from babel.messages.mofile import write_mo

    buffer = io.BytesIO()
    write_mo(buffer, catalog, use_fuzzy=False)
    return buffer.getvalue()


def counts(catalog) -> tuple[int, int, int]:
    """(translated, fuzzy, untranslated) entries of a catalogue (its header left out)."""
    messages = [m for m in catalog if m.id]
    fuzzy = sum(1 for m in messages if m.fuzzy)
    untranslated = sum(1 for m in messages if not m.fuzzy and not all(_strings(m)))
    return len(messages) - fuzzy - untranslated, fuzzy, untranslated


def format_fields(text: str) -> list[str]:
    """The `{...}` fields of a format string or f-string, in order (`{{` and `}}` are literal braces)."""
    fields, index = [], 0
    while index < len(text):
        if text.startswith(("{{", "}}"), index):
            index += 2
            continue
        if text[index] == "{":
            depth, end = 0, index
            while end < len(text):
                depth += {"{": 1, "}": -1}.get(text[end], 0)
                if depth == 0:
                    break
                end += 1
            fields.append(text[index : end + 1])
            index = end + 1
            continue
        index += 1
    return fields


def short(message_id, width: int = 70) -> str:
    """The first characters of an entry's English (a plural entry's singular), on one line, quoted."""
    text = message_id[0] if isinstance(message_id, tuple) else message_id
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= width else flat[: width - 3] + "...")
