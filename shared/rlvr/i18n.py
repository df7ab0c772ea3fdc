"""The language the package speaks to a learner: English, or Chinese (zh_CN).

The language is the one chosen by `set_language` (the Chinese notebooks call `rlvr.set_language("zh_CN")` in their
setup cell), else the environment variable RLVR_LANG, else the locale (LANGUAGE, LC_ALL, LC_MESSAGES, LANG, as
gettext reads them). Messages go through stdlib `gettext` with the compiled catalogue
`rlvr/locale/<lang>/LC_MESSAGES/rlvr.mo` (its source `rlvr.po` is extracted from the package by Babel:
`python -m coursetools messages update`). In code a learner-facing sentence is written whole, fields by name:

    from rlvr.i18n import _
    message = _("passed {n} of {total} cases.").format(n=passed, total=len(cases))

`N_("...")` marks a text defined at import time (a table of titles, a hint) for extraction without translating it;
the code that shows it calls `_()` on it then, so it follows the language chosen later.

Printed lists: `join(items)` and `join_clauses(items)` put the language's separator between items (', ' and '; ' in
English, '、' and '；' in Chinese), where a literal ", ".join would print English punctuation in Chinese.

Printed tables: an f-string width (`f"{label:>24}"`) counts characters, and a Chinese character takes two columns;
`pad(label, 24, ">")` pads to display columns instead (`text_width`, from the wcwidth library).

Figures: in Chinese, matplotlib needs a font with Chinese glyphs. `use_figure_font()` registers one with
`matplotlib.font_manager.addfont` and puts it after the user's sans-serif font in `font.family`, so Latin text looks
as in the English edition and Chinese characters fall back to it (nothing is written to the user's matplotlibrc).
The font comes from the `[zh]` extra (the PyPI package mplfonts, which ships Noto Sans CJK SC), else from a CJK font
installed on the system (Debian's fonts-noto-cjk or fonts-wqy-microhei, macOS's PingFang, Windows' Microsoft YaHei).
"""

from __future__ import annotations

import functools
import gettext
import importlib.util
import locale
import os
import sys
import warnings
from pathlib import Path

DOMAIN = "rlvr"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
LANG_ENV = "RLVR_LANG"
LANGUAGES = ("en", "zh_CN")  # the course's languages, the one list (coursetools reads it too); the first is the source
SOURCE_LANGUAGE = LANGUAGES[0]  # English: the notebooks and the code are written in it, it has no catalogue
TRANSLATED = LANGUAGES[1:]  # each has catalogues: rlvr/locale/<lang>/ (the package's) and i18n/<lang>/ (the notebooks')
ALIASES = {"zh": "zh_CN", "zh_hans": "zh_CN", "zh_cn": "zh_CN", "zh_sg": "zh_CN", "en": "en", "c": "en", "posix": "en"}
CJK_FAMILIES = (  # families matplotlib may find on a system, tried in this order when the [zh] extra is missing
    "Noto Sans CJK SC",
    "Source Han Sans SC",
    "WenQuanYi Micro Hei",
    "WenQuanYi Zen Hei",
    "PingFang SC",
    "Microsoft YaHei",
    "SimHei",
)
MPLFONTS_FILE = ("fonts", "NotoSansCJKsc-Regular.otf")  # inside the mplfonts package ([zh] extra)

_chosen: str | None = None
_font_family: str | None = None  # the CJK family added to matplotlib's font.family, while one is
_registered: set[str] = set()  # font files given to matplotlib's font manager


def normalize(lang: str | None) -> str | None:
    """'zh_CN' for 'zh', 'zh-CN', 'zh_CN.UTF-8', ...; 'en' for English or C; None for a language we do not have."""
    if not lang:
        return None
    code = lang.split(".")[0].split("@")[0].replace("-", "_").strip().lower()
    if code in ALIASES:
        return ALIASES[code]
    return "en" if code.startswith("en") else ("zh_CN" if code.startswith("zh") else None)


def environment_language() -> str | None:
    """The language RLVR_LANG asks for, else the locale's (None if neither names one we have)."""
    for name in (LANG_ENV, "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        for value in os.environ.get(name, "").split(":"):
            found = normalize(value)
            if found:
                return found
    try:
        return normalize(locale.getlocale()[0])
    except ValueError:
        return None


def language() -> str:
    """The language the package speaks now: set_language's, else RLVR_LANG's, else the locale's, else English."""
    return _chosen or environment_language() or "en"


def set_language(lang: str | None) -> str:
    """Speak `lang` from now on ('zh_CN' or 'en'; None goes back to RLVR_LANG / the locale); returns the language.
    In Chinese, figures drawn from now on use a CJK font (see `use_figure_font`)."""
    global _chosen
    if lang is not None and normalize(lang) is None:
        raise ValueError(f"unknown language {lang!r}: choose one of {', '.join(LANGUAGES)}")
    _chosen = normalize(lang)
    prepare_figures()
    return language()


@functools.cache
def translator(lang: str | None) -> gettext.NullTranslations:
    """The gettext translations of one language (English and unknown languages: the identity)."""
    code = normalize(lang) or "en"
    if code == "en":
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, localedir=str(LOCALE_DIR), languages=[code], fallback=True)


def _(message: str) -> str:
    """`message` in the current language."""
    return translator(language()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The singular or plural form for `n`, in the current language."""
    return translator(language()).ngettext(singular, plural, n)


def N_(message: str) -> str:
    """Mark `message` for extraction without translating it (it is translated where it is shown, with `_`)."""
    return message


def NN_(singular: str, plural: str) -> tuple[str, str]:
    """Mark a singular/plural pair for extraction without translating it (shown later through `ngettext`)."""
    return singular, plural


# ----------------------------------------------------------------------------------------------- printed lists


def join(items) -> str:
    """Items (names, numbers, 'name value' pairs) as one list: 'a, b, c' in English, 'a、b、c' in Chinese."""
    return _(", ").join(map(str, items))


def join_clauses(items) -> str:
    """Items that are clauses of their own: 'a; b' in English, 'a；b' in Chinese."""
    return _("; ").join(map(str, items))


# ----------------------------------------------------------------------------------------------- printed tables


def text_width(text: str) -> int:
    """Columns `text` takes in a terminal or notebook output (wcwidth): a Chinese character takes two."""
    from wcwidth import wcswidth, wcwidth

    width = wcswidth(text)
    return width if width >= 0 else sum(max(0, wcwidth(c)) for c in text)  # -1: a control character (tab, newline)


def pad(text: str, width: int, align: str = "<") -> str:
    """`text` filled with spaces to `width` display columns, like f"{text:<width}" ('<', '>' or '^') for Chinese."""
    text = str(text)
    fill = max(0, width - text_width(text))
    left = {"<": 0, ">": fill, "^": fill // 2}[align]
    return " " * left + text + " " * (fill - left)


# ----------------------------------------------------------------------------------------------- figures


def mplfonts_file() -> Path | None:
    """Noto Sans CJK SC as shipped by the mplfonts package (the [zh] extra), found without importing it."""
    spec = importlib.util.find_spec("mplfonts")
    if spec is None or not spec.origin:
        return None
    path = Path(spec.origin).parent.joinpath(*MPLFONTS_FILE)
    return path if path.exists() else None


def cjk_font_file() -> Path | None:
    """A font file with Chinese glyphs: mplfonts' Noto Sans CJK SC, else one of CJK_FAMILIES on the system."""
    shipped = mplfonts_file()
    if shipped is not None:
        return shipped
    from matplotlib import font_manager

    for family in CJK_FAMILIES:
        try:
            path = font_manager.findfont(font_manager.FontProperties(family=family), fallback_to_default=False)
        except ValueError:
            continue
        return Path(path)
    return None


def use_figure_font(on: bool = True) -> str | None:
    """Add a CJK font behind matplotlib's font.family (on) or take it out again (off); the family name, or None
    (with a warning saying how to install one) if no CJK font can be found."""
    global _font_family
    import matplotlib
    from matplotlib import font_manager

    families = [f for f in matplotlib.rcParams["font.family"] if f != _font_family]
    if not on:
        matplotlib.rcParams["font.family"] = families
        _font_family = None
        return None
    path = cjk_font_file()
    if path is None:
        warnings.warn(
            "no font with Chinese characters found, figures will show boxes: pip install 'rlvr[zh]' "
            "(or install a CJK font, e.g. Debian's fonts-noto-cjk)",
            stacklevel=2,
        )
        return None
    if str(path) not in _registered:  # once per process: addfont appends to matplotlib's font list
        font_manager.fontManager.addfont(str(path))
        _registered.add(str(path))
    _font_family = font_manager.FontProperties(fname=str(path)).get_name()
    matplotlib.rcParams["font.family"] = [*families, _font_family]
    return _font_family


def prepare_figures() -> None:
    """Give matplotlib the current language's font, if matplotlib is in use (imported) already."""
    if "matplotlib" not in sys.modules and language() == "en":
        return
    if language() == "zh_CN":
        use_figure_font(True)
    elif _font_family is not None:
        use_figure_font(False)
