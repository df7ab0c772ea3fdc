"""A row of "the lecture says X, we measure Y" and the tables the notebooks and `reproduce` print."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np


def finite_mean(x: np.ndarray) -> float:
    """Mean of the finite entries (NaN, without a warning, when there are none)."""
    finite = np.asarray(x, dtype=float)
    finite = finite[np.isfinite(finite)]
    return float(finite.mean()) if len(finite) else math.nan


@dataclass
class Row:
    """One quantitative statement of the lecture next to our measurement."""

    section: str  # lecture section, e.g. "2.1"
    figure: str  # what is measured, e.g. "mean final accuracy, +5 reward, no baseline"
    lecture: float | str | None  # the lecture's value (None if it states none)
    measured: float | None  # our value (mean over seeds)
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


def fmt(value, unit: str = "") -> str:
    """A value for a table: percentages from fractions, 3 significant digits otherwise."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if not math.isfinite(value):
        return "nan"
    if unit == "%":
        return f"{100 * value:.1f}%"
    text = f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{text} {unit}".strip() if unit not in ("", "x") else text + unit


def verdict(row: Row) -> str:
    """'yes' / 'NO' / '—' for the agrees column."""
    return {True: "yes", False: "NO", None: "—"}[row.agrees]


def band_text(row: Row) -> str:
    """The tolerance band as text."""
    return "—" if row.band is None else f"[{fmt(row.band[0], row.unit)}, {fmt(row.band[1], row.unit)}]"


def markdown_table(rows: list[Row]) -> str:
    """The rows as a Markdown table."""
    lines = ["| section | figure | lecture | measured (± std) | band | agrees? | seeds |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        measured = fmt(r.measured, r.unit) + (f" ± {fmt(r.spread, r.unit)}" if r.spread else "")
        seeds = ",".join(map(str, r.seeds)) or "—"
        figure = r.figure.replace("|", "&#124;")
        lines.append(f"| {r.section} | {figure} | {fmt(r.lecture, r.unit)} | {measured} | {band_text(r)} "
                     f"| {verdict(r)} | {seeds} |")
    return "\n".join(lines)


def text_table(rows: list[Row]) -> str:
    """The rows as a fixed-width text table (terminal)."""
    head = ("sec", "figure", "lecture", "measured (± std)", "band", "agrees?")
    body = [(r.section, r.figure, fmt(r.lecture, r.unit),
             fmt(r.measured, r.unit) + (f" ± {fmt(r.spread, r.unit)}" if r.spread else ""), band_text(r), verdict(r))
            for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    return "\n".join("  ".join(str(x).ljust(w) for x, w in zip(line, widths)) for line in [head, *body])


class Table:
    """Rows that render as HTML in Jupyter and as text elsewhere."""

    def __init__(self, rows: list[Row], title: str = "The lecture's figures next to ours"):
        self.rows, self.title = rows, title

    def _repr_markdown_(self) -> str:
        return f"**{self.title}**\n\n" + markdown_table(self.rows)

    def __repr__(self) -> str:
        return f"{self.title}\n{text_table(self.rows)}"


def show(rows: list[Row], title: str = "The lecture's figures next to ours") -> Table:
    """Table of rows for the last line of a notebook cell."""
    return Table(rows, title)
