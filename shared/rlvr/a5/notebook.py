"""A Report in a notebook: the verdicts and findings as text, the curves as a figure, shown by the cell."""

from __future__ import annotations

import html

from .report import report_lines
from .session import Report


class NotebookReport:
    """Displays itself: the report's text, then the curves (when something trained)."""

    def __init__(self, report: Report):
        self.report = report

    def __repr__(self) -> str:
        return "\n".join(report_lines(self.report))

    def _repr_html_(self) -> str:
        """The text as preformatted HTML, then the curves as an inline PNG."""
        import base64
        import io

        text = f"<pre>{html.escape(repr(self))}</pre>"
        training = self.report.training
        if training is None or not training.history:
            return text
        from matplotlib.figure import Figure

        from ..figures.a5 import draw_runs

        fig = Figure(figsize=(12, 6.5))
        draw_runs(fig, training.history, training.reference)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=90)
        return text + f'<img src="data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}">'

    def to_json(self) -> dict:
        """The --json schema."""
        return self.report.to_json()
