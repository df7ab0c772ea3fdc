"""A row of "the lecture says X, we measure Y", the one rule that decides whether they agree, and the tables the
notebooks and `reproduce` print.

The band rule (README, "Reproducing the lecture's numbers"; docs/authoring.md). A measured row agrees when

    |ours - lecture| <= r + 3 u

* r is half a unit of the last digit the lecture shows ("94%" -> 0.5 points, "1.36" -> 0.005, "1.0" -> 0.05); a
  value it marks as approximate ("~55%") is read as rounded to 5 such units (2.5 points);
* u is the standard uncertainty of the difference. Ours is a mean over n seeds whose spread is
  s' = max(s, SE) (s: std over seeds; SE: the evaluation's own standard error, which also stands in for s when n = 1
  or when three seeds happen to agree too well), so its uncertainty is s' / sqrt(n). When the lecture's figure is
  itself one run of a noisy experiment (`lecture_is_a_run=True`) it varies like one of our seeds, and
  u = s' * sqrt(1 + 1/n); when it is exact (closed form, enumeration, a published simulation of negligible noise),
  u = s' / sqrt(n).

Bands are clipped to what the quantity allows (a share to [0, 1]). Statements in words ("much faster", "barely
moves") become `claim_row`s whose interval is fixed from the wording before measuring; rows without a lecture number
are shown with no band.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import asdict, dataclass, field

import numpy as np

from rlvr.i18n import _, pad, text_width  # pad, text_width: the experiments import them from here too


def finite_mean(x: np.ndarray) -> float:
    """Mean of the finite entries (NaN, without a warning, when there are none)."""
    finite = np.asarray(x, dtype=float)
    finite = finite[np.isfinite(finite)]
    return float(finite.mean()) if len(finite) else math.nan


def smooth(values, window: int) -> np.ndarray:
    """Trailing moving average: step t is the mean of steps t - window + 1 ... t (fewer at the start, so a curve
    starts where its run starts), skipping NaN (steps where a metric is undefined); NaN only where the whole window
    is. The one smoothing of every curve and reading. [T] -> [T]"""
    values = np.asarray(values, dtype=float)
    padded = np.concatenate([np.full(window - 1, np.nan), values])  # [T + window - 1]
    ok = np.isfinite(padded)
    kernel = np.ones(window)
    sums = np.convolve(np.where(ok, padded, 0.0), kernel, mode="valid")  # [T]
    counts = np.convolve(ok.astype(float), kernel, mode="valid")  # [T]
    return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def first_step(condition, start: int = 0) -> int | None:
    """The first step at or after `start` where `condition` (one bool per step, e.g. `smooth(curve, 5) >= 0.8`)
    holds; None if none does. The one reading of "the first step where ...": steps count from 0, and whoever prints
    one says what None means there ('not reached', '—'). [T] -> int | None"""
    hits = np.flatnonzero(np.asarray(condition, dtype=bool)[start:])
    return start + int(hits[0]) if hits.size else None


@dataclass(kw_only=True)
class Row:
    """One quantitative statement of the lecture next to our measurement."""

    section: str  # lecture section, e.g. "2.1"
    figure: str  # what is measured, e.g. "mean final accuracy, +5 reward, no baseline"
    lecture: float | str | None = None  # the lecture's value (None if it states none)
    measured: float | None = None  # our value (mean over seeds)
    band: tuple[float, float] | None = None  # the measured value agrees if it lies in [lo, hi]
    unit: str = ""  # "", "%", "x", "GB", "tokens", "s"
    spread: float | None = None  # std over seeds, if several
    seeds: tuple = ()
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def agrees(self) -> bool | None:
        """True / False against the band; None when there is no band or no measurement."""
        if self.band is None or self.measured is None or not math.isfinite(self.measured):
            return None
        return self.band[0] <= self.measured <= self.band[1]

    def to_dict(self) -> dict:
        """Plain dict (JSON)."""
        return {**asdict(self), "agrees": self.agrees}


BOUNDS = {"%": (0.0, 1.0), "tokens": (0.0, math.inf), "GB": (0.0, math.inf), "steps": (0.0, math.inf)}


def half_unit(shown: str) -> float:
    """r: half a unit of the last digit of a number as the lecture writes it, in the row's units ("94%" -> 0.005,
    "1.36" -> 0.005, "1.0" -> 0.05, "252" -> 0.5); "~" (approximate) multiplies it by 5; "exact" and a plain "0"
    give 0."""
    text = shown.strip()
    if text == "exact":  # a formula or a claim of exactness: nothing is rounded
        return 0.0
    approximate = text.startswith("~")
    number = text.lstrip("~").rstrip("%x").strip()
    if number.lstrip("-") == "0":  # a plain zero states an exact value ("unbiased": bias 0), not a rounded one
        return 0.0
    decimals = len(number.split(".")[1]) if "." in number else 0
    r = 0.5 * 10.0 ** (-decimals) * (5 if approximate else 1)
    return r / 100 if text.endswith("%") else r


def lecture_value(shown: str) -> float:
    """The number a lecture text stands for, in the row's units ("94%" -> 0.94, "~55%" -> 0.55, "1.36" -> 1.36)."""
    text = shown.strip().lstrip("~")
    return float(text.rstrip("%")) / 100 if text.endswith("%") else float(text.rstrip("x"))


def mean_and_spread(values) -> tuple[float, float | None]:
    """Mean over seeds and the std over seeds (None for one seed)."""
    values = [float(v) for v in values]
    return float(np.mean(values)), (float(np.std(values, ddof=1)) if len(values) > 1 else None)


def uncertainty(values, se: float = 0.0, lecture_is_a_run: bool = True) -> float:
    """u of the band rule: the standard uncertainty of (mean of `values` - the lecture's figure)."""
    n = len(values)
    _mean, spread = mean_and_spread(values)
    per_seed = max(spread or 0.0, se)
    return per_seed * math.sqrt(1 + 1 / n) if lecture_is_a_run else per_seed / math.sqrt(n)


def lecture_row(
    *,
    section: str,
    figure: str,
    lecture: float | str,
    shown: str | None = None,
    values,
    se: float = 0.0,
    lecture_is_a_run: bool = True,
    unit: str = "",
    bounds: tuple | None = None,
    seeds=(),
    note: str = "",
) -> Row:
    """A measured row under the one band rule: band = lecture ± (r + 3u), clipped (see the module docstring).

    Args:
        lecture: the lecture's number as it writes it ("94%", "~55%", "1.0") or as a float in the row's units;
            shown: overrides the text that sets r ("exact" for a formula: r = 0).
        values: our measurement, one per seed; se: the evaluation's standard error of one seed's measurement.
        bounds: what the quantity can be, if the unit does not say (a std: (0, inf)).
    """
    if isinstance(lecture, str):
        shown, lecture = shown or lecture, lecture_value(lecture)
    measured, spread = mean_and_spread(values)
    r = half_unit(shown if shown is not None else f"{lecture:g}")
    u = uncertainty(values, se, lecture_is_a_run)
    limits = bounds or BOUNDS.get(unit, (-math.inf, math.inf))
    band = (max(lecture - r - 3 * u, limits[0]), min(lecture + r + 3 * u, limits[1]))
    text = f"band = lecture ± (r {fmt(r, unit)} + 3u, u {fmt(u, unit)})"
    if band == limits:  # the band allows every possible value: no comparison is possible
        band, text = None, f"no band: r + 3u (u {fmt(u, unit)}) spans every possible value"
    return Row(
        section=section,
        figure=figure,
        lecture=lecture,
        measured=measured,
        band=band,
        unit=unit,
        spread=spread,
        seeds=tuple(seeds),
        note=f"{text}; {note}" if note else text,
    )


def claim_row(
    *,
    section: str,
    figure: str,
    lecture: str | float | None,
    values,
    band: tuple[float, float] | None,
    unit: str = "",
    seeds=(),
    note: str = "",
) -> Row:
    """A row for a statement in words: its interval was fixed from the wording before measuring (or None: shown,
    not judged)."""
    values = [float(v) for v in values]
    finite = all(math.isfinite(v) for v in values) and bool(values)
    measured, spread = mean_and_spread(values) if finite else (math.nan, None)
    return Row(
        section=section,
        figure=figure,
        lecture=lecture,
        measured=measured,
        band=band,
        unit=unit,
        spread=spread,
        seeds=tuple(seeds),
        note=note,
    )


def shown(text: str) -> str:
    """A row's text (its figure, the lecture's words) in the learner's language: the translation when the catalogue
    has one (the module that writes the text marks it with N_), else the text as it is; `python -m rlvr reproduce`
    prints the English."""
    return _(text) if text else text


def columns_text(rows: list[tuple[str, ...]]) -> str:
    """Rows of strings as left-aligned columns (the first row is the header); a Chinese character is two columns."""
    widths = [max(text_width(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(pad(cell, w) for cell, w in zip(row, widths)).rstrip() for row in rows)


MATH_WORDS = {  # mathtext commands of the package's figure labels -> plain Unicode (see `plain_math`)
    r"\mathrm": "",
    r"\log": "log ",
    r"\times": "×",
    r"\rho": "ρ",
    r"\pi": "π",
    r"\theta": "θ",
    r"\beta": "β",
    r"\lambda": "λ",
    r"\ell": "ℓ",
    r"\epsilon": "ε",
}


def has_wide_text(text: str) -> bool:
    """True if `text` holds a Chinese character (East Asian wide or full-width)."""
    return any(unicodedata.east_asian_width(c) in "WF" for c in text)


def plain_math(text: str) -> str:
    """A figure label with mathtext (`$\\rho A$`, `KL$_t$`) as plain Unicode text (ρ A, KL_t) when it also holds
    Chinese characters: matplotlib draws a label with a `$...$` pair entirely with its math fonts, which have no
    Chinese glyphs. Labels without Chinese characters are returned unchanged."""
    if "$" not in text.replace(r"\$", "") or not has_wide_text(text):
        return text
    text = text.replace(r"\$", "\x00")  # an escaped dollar is a literal one
    for command, plain in sorted(MATH_WORDS.items(), key=lambda item: -len(item[0])):
        text = text.replace(command, plain)
    text = text.replace("^2", "²").replace("{", "").replace("}", "").replace("\\", "").replace("$", "")
    return text.replace("\x00", "$")


def plain_math_labels(fig) -> None:
    """Every text of `fig` (titles, axis labels, legends, notes) through `plain_math`: call it at the end of a draw
    whose translated labels can mix Chinese and mathtext (nothing changes in English)."""
    from rlvr.i18n import language

    if language() == "en":
        return
    for artist in fig.findobj(lambda artist: callable(getattr(artist, "set_text", None))):  # matplotlib's Texts
        text = artist.get_text()
        if "$" in text and has_wide_text(text):
            artist.set_text(plain_math(text))


def seconds_text(seconds: float) -> str:
    """CPU or wall-clock seconds for a table cell: '<0.1 s', '2.4 s', '51 s', '3.2 min'."""
    in_seconds, in_minutes = _("{seconds} s"), _("{minutes} min")  # '2.4 秒', '3.2 分钟' in Chinese
    if seconds < 0.05:
        return in_seconds.format(seconds="<0.1")
    if seconds < 10:
        return in_seconds.format(seconds=f"{seconds:.1f}")
    return (
        in_seconds.format(seconds=f"{seconds:.0f}")
        if seconds < 120
        else in_minutes.format(minutes=f"{seconds / 60:.1f}")
    )


def multiple(x: str) -> str:
    """A multiple as printed, from its number already formatted: '3.5x' in English, '3.5 倍' in Chinese."""
    return _("{x}x").format(x=x)


def two_decimals(value: float) -> str:
    """A reading with two decimals, never '-0.00' (a tiny negative value reads as 0.00)."""
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text


def signed(value: float, decimals: int = 2) -> str:
    """value with its sign and `decimals` decimals; a value that rounds to zero prints as 0 (never '-0.00')."""
    rounded = round(float(value), decimals)
    return "0" if rounded == 0 else f"{rounded:+.{decimals}f}"


def fmt(value, unit: str = "", extra_digits: int = 0) -> str:
    """A value for a table: percentages from fractions (one decimal), 3 significant digits otherwise (plus
    extra_digits in both)."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if not math.isfinite(value):
        return "nan"
    if unit == "%":
        return f"{100 * value:.{1 + extra_digits}f}%"
    text = f"{value:.{3 + extra_digits}g}" if abs(value) < 1000 else f"{value:,.0f}"
    if unit == "tokens" and 1 <= abs(value) < 100 and value != int(value):  # a mean: 15.0 (not 15) beside 9.2
        text = f"{value:.{1 + extra_digits}f}"
    if unit == "tokens" and text == "1":
        unit = "token"
    return f"{text} {unit}".strip() if unit not in ("", "x") else text + unit


def verdict(row: Row) -> str:
    """'yes' / 'NO' / '—' for the agrees column."""
    return {True: "yes", False: "NO", None: "—"}[row.agrees]


def band_text(row: Row) -> str:
    """The tolerance band as text."""
    return value_and_band_text(row)[1]


def value_and_band_text(row: Row) -> tuple[str, str]:
    """The measured value and the band as text, with more digits where the value and an edge of its band would
    print the same (a value just outside its band would read as on it, or the reverse)."""
    for extra in range(4):
        measured = fmt(row.measured, row.unit, extra)
        if row.band is None:
            return measured, "—"
        edges = [fmt(edge, row.unit, extra) for edge in row.band]
        if not any(measured == text and row.measured != edge for text, edge in zip(edges, row.band)):
            break
    return measured, f"[{edges[0]}, {edges[1]}]"


def measured_text(row: Row) -> str:
    """The measured value (± its spread over seeds) as text."""
    return value_and_band_text(row)[0] + (f" ± {fmt(row.spread, row.unit)}" if row.spread else "")


def markdown_table(rows: list[Row]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| section | figure | lecture | measured (± std) | band | agrees? | seeds |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        seeds = ",".join(map(str, r.seeds)) or "—"
        figure = r.figure.replace("|", "&#124;")
        lines.append(
            f"| {r.section} | {figure} | {fmt(r.lecture, r.unit)} | {measured_text(r)} | {band_text(r)} "
            f"| {verdict(r)} | {seeds} |"
        )
    return "\n".join(lines)


def text_table(rows: list[Row]) -> str:
    """The rows as a fixed-width text table (terminal)."""
    head = ("sec", "figure", "lecture", "measured (± std)", "band", "agrees?")
    body = [
        (
            r.section,
            r.figure,
            fmt(r.lecture, r.unit),
            measured_text(r),
            band_text(r),
            verdict(r),
        )
        for r in rows
    ]
    widths = [max(text_width(str(x)) for x in col) for col in zip(head, *body)]
    return "\n".join("  ".join(pad(str(x), w) for x, w in zip(line, widths)) for line in [head, *body])


class Table:
    """Rows that render as HTML in Jupyter and as text elsewhere."""

    def __init__(self, rows: list[Row], title: str = "The lecture's figures next to ours"):
        self.rows, self.title = rows, title

    def _repr_markdown_(self) -> str:
        return f"**{self.title}**\n\n" + markdown_table(self.rows)

    def __repr__(self) -> str:
        return f"{self.title}\n{text_table(self.rows)}"


class Markdown:
    """Markdown text (a table, a summary) that Jupyter renders and every other view (a terminal, a plain-text
    export, a reader without a Markdown renderer) shows as its source without the bold marks, never as
    `<... Markdown object>`."""

    def __init__(self, markdown: str):
        self.markdown = markdown

    def _repr_markdown_(self) -> str:
        return self.markdown

    def __repr__(self) -> str:
        return self.markdown.replace("**", "")


def show(rows: list[Row], title: str = "The lecture's figures next to ours") -> Table:
    """Table of rows for the last line of a notebook cell."""
    return Table(rows, title)
