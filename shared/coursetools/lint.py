"""A learner-facing lint of the notebooks: what a reader should never meet in a cell (its text or what it printed).

Each rule returns one line per finding, naming the notebook and the cell (0-based, as the rendered text view numbers
them). A cell may allow a rule by name in its metadata (`"lint_allow": ["nan"]`), e.g. notebook 06's NaN run.
`python -m coursetools lint [--which solutions|notebooks|all] [NOTEBOOK ...]` prints them (so does `notebooks lint`;
`notebooks render` lints what the cells printed). A leaf: it imports nothing of coursetools.
"""

from __future__ import annotations

import re

import nbformat

MAX_WORDS = 250  # a Markdown cell longer than this becomes steps, a table or a figure
VERIFICATION = {  # words that belong to `python -m rlvr reproduce`, the README and docs/, never to a learner's cell
    "band": r"\bbands?\b",
    "agrees?": r"\bagrees\?",
    "verdict": r"\|\s*(?:NO|yes)\s*\|",
    "r + 3u": r"\br\s*\+\s*3u\b",
    "RLVR_FAST": r"\bRLVR_FAST\b|\bfast mode\b",
    "CI": r"\bCI\b",
    "calibration": r"\bcalibrat\w*",
    "machine": r"\bx86_64\b|\bAVX\d*\b|\bthreads?\b.*\bcores?\b",
    "seed list": r"\bseeds\s+\d+\s*[-–,]\s*\d+",
    "version pin": r"\btorch\s*==\s*\d|\brequire\(",
    "chosen to match": r"\bchos(?:e|en)\b[^.]*\bto (?:match|put)\b|\bmatch\w* by construction\b",
    "timing method": r"\bprocess_time\b|\bperf_counter\b",  # "CPU seconds" is a unit the race plots against
    "speed-up": r"\bspeed[- ]?ups?\b|\bspeed trick\b",
}
SETUP_ONLY = r"\bsize\(|\bfast_mode\(|\brlvr\.check_install\("  # CI machinery a setup cell may hold, no other code cell
PROGRESS = re.compile(r"(\d+)%\|[^|\n]*\|\s*(\d+)/(\d+)")
NEGATIVE_ZERO = re.compile(r"(?<![\w.])-0(?:\.0+)?(?![\d.eE])")
PLUS_MINUS = re.compile(r"\+-\s*\d")
NUMBER = re.compile(r"(?<![\w.])\d+\.\d+(?:[eE][-+]?\d+)?")
FLOAT_NOISE = re.compile(r"\d\.\d+e-(?:1[0-9]|[2-9]\d)\b")
NAN = re.compile(r"\bnan\b|\bNaN\b")
MARKER = re.compile(r"(BEGIN|END) SOLUTION")
MARKER_COMMENT = re.compile(r"<!--\s*(BEGIN|END) SOLUTION\s*-->")
MAX_SIGNIFICANT = 6


def significant_digits(number: str) -> int:
    """Significant digits of a printed decimal ('0.0012340' -> 5, '3.14' -> 3; the exponent is not counted)."""
    mantissa = re.split(r"[eE]", number)[0].replace(".", "").lstrip("0")
    return len(mantissa)


def output_text(cell) -> str:
    """What a code cell printed or displayed as text (streams, text/plain, text/markdown, text/html tables)."""
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":  # a carriage return overwrites its line, as in a notebook
            parts.append("\n".join(line.split("\r")[-1] for line in output.get("text", "").split("\n")))
        data = output.get("data", {})
        for kind in ("text/markdown", "text/plain"):
            if kind in data:
                parts.append(data[kind] if isinstance(data[kind], str) else "".join(data[kind]))
                break
    return "\n".join(parts)


def _allowed(cell) -> set:
    """The rules a cell opts out of (cell.metadata.lint_allow)."""
    return set(cell.get("metadata", {}).get("lint_allow", []))


Finding = tuple[str, str]  # (rule, what a reader would meet)


def markdown_findings(cell) -> list[Finding]:
    """What is wrong with one Markdown cell's text."""
    text = MARKER_COMMENT.sub("", cell.source)
    found = []
    words = len(text.split())  # every whitespace-separated token, a formula's included: what a reader wades through
    if words > MAX_WORDS:
        found.append(("words", f"{words} words (more than {MAX_WORDS}): make it steps, a table or a figure"))
    if MARKER.search(text):
        found.append(("marker", "a solution marker shows as text: write <!-- BEGIN SOLUTION --> / <!-- END ... -->"))
    if "**" in rendered_text(text):
        found.append(
            ("bold", "'**' shows as text (no space inside the markers; after punctuation, a space after them)")
        )
    return found + verification_findings(text)


def rendered_text(markdown: str) -> str:
    """A Markdown cell as a reader sees it (CommonMark, as Jupyter renders it), each formula an "x", without code."""
    from markdown_it import MarkdownIt

    html = (
        MarkdownIt("commonmark").enable("table").render(re.sub(r"\$\$.+?\$\$|\$[^$\n]+\$", "x", markdown, flags=re.S))
    )
    return re.sub(r"<code>.*?</code>|<pre>.*?</pre>", " ", html, flags=re.S)


def verification_findings(text: str) -> list[Finding]:
    """Verification words (bands, verdicts, CI, calibration, machine, seeds) in a learner's text."""
    return [
        (name, f"'{name}' belongs in reproduce / docs") for name, rule in VERIFICATION.items() if re.search(rule, text)
    ]


def printed_findings(text: str) -> list[Finding]:
    """What is wrong with what a cell printed."""
    found = verification_findings(text)
    for done, total in ((m.group(2), m.group(3)) for m in PROGRESS.finditer(text)):
        if done != total:
            found.append(("progress", f"a progress bar stopped at {done}/{total}"))
    patterns = (("-0", NEGATIVE_ZERO), ("+-", PLUS_MINUS), ("float noise", FLOAT_NOISE), ("nan", NAN))
    for rule, pattern in patterns:
        match = pattern.search(text)
        if match:
            found.append((rule, f"{rule!r} printed: {match.group(0)!r}"))
    long = [n for n in NUMBER.findall(text) if significant_digits(n) > MAX_SIGNIFICANT]
    if long:
        found.append(("digits", f"a float with more than {MAX_SIGNIFICANT} significant digits: {long[0]}"))
    return found


def stderr_findings(cell) -> list[Finding]:
    """Warnings a cell wrote to stderr (a progress bar's own output is not a warning)."""
    texts = [o.get("text", "") for o in cell.get("outputs", []) if o.get("name") == "stderr"]
    return [("warning", "a warning was printed")] if any(re.search(r"Warning\b", t) for t in texts) else []


def lint_notebook(nb: nbformat.NotebookNode, name: str = "notebook") -> list[str]:
    """Every finding in a notebook (outputs too, if it was executed): 'name, cell N: what'."""
    findings = []
    setup_seen = False
    for index, cell in enumerate(nb.cells):
        found = []
        if cell.cell_type == "markdown":
            found = markdown_findings(cell)
        elif cell.cell_type == "code":
            if setup_seen and re.search(SETUP_ONLY, cell.source):
                found.append(("setup", "CI machinery (size(), fast_mode(), check_install()) outside the setup cell"))
            setup_seen = True
            found += printed_findings(output_text(cell)) + stderr_findings(cell)
        allowed = set(cell.get("metadata", {}).get("lint_allow", []))
        findings += [f"{name}, cell {index}: {what}" for rule, what in found if rule not in allowed]
    return findings
