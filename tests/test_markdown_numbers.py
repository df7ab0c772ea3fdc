"""Numbers in the notebooks' Markdown are the lecture's, or constants of the module: a figure a run measured is printed
by a cell from that run, so it is right on the learner's machine (docs/authoring.md, "Numbers in the prose").

A Markdown token looks measured when it is a decimal ("1.58"), a percentage ("94%"), a multiple ("5x") or a count with
a unit of time, length or training ("17 s", "58 steps", "15 tokens"). It passes when the lecture states it
(tests/data/lecture_numbers.txt), when it is one of the module's constants or closed forms (tests/data/
markdown_constants/, each with its reason), or when it sits in a LaTeX formula that derives it. Anything else fails
with the notebook, cell and context.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LECTURE = {
    line.strip()
    for line in (ROOT / "tests" / "data" / "lecture_numbers.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
}

CONSTANTS_DIR = ROOT / "tests" / "data" / "markdown_constants"  # all.txt, and 01.txt ... 05.txt per notebook


def constants(notebook: str) -> dict[str, str]:
    """token -> reason: the numbers every notebook (all.txt) and this notebook (NN.txt) may quote."""
    found = {}
    for name in ("all", notebook[:2]):
        path = CONSTANTS_DIR / f"{name}.txt"
        for line in path.read_text().splitlines() if path.exists() else []:
            if line.strip() and not line.startswith("#"):
                token, _, why = line.partition("#")
                found[token.strip()] = why.strip()
    return found


MEASURED = re.compile(r"(?<![\w.$\\^_{])(-?\d+(?:\.\d+)?)(%|x\b| ?(?:s|seconds|ms|steps|tokens|nats)\b)?")
LATEX = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.S)


def measured_tokens(markdown: str) -> list[tuple[str, str]]:
    """(token, context) for every measured-looking number outside LaTeX formulas, code spans and arXiv ids."""
    text = LATEX.sub(" ", markdown)
    text = re.sub(r"`[^`]*`|arXiv:\d+\.\d+|\(\w[\w .]* et al\. \d{4}[^)]*\)|\d{4}-\d{2}-\d{2}", " ", text)
    text = re.sub(r"(?m)^#+ [\d.]+|\b\d+\.\d+\.\d+\b|[Ss]ections? [\d., and]+", " ", text)  # headings, versions
    found = []
    for match in MEASURED.finditer(text):
        number, unit = match.group(1), match.group(2) or ""
        if "." not in number and not unit:
            continue  # a plain integer: a count, a section, a year
        token = number + ("%" if unit == "%" else "")
        context = " ".join(text[max(0, match.start() - 50) : match.end() + 30].split())
        found.append((token, context))
    return found


def allowed(token: str, notebook: str = "") -> bool:
    """The lecture states it, or it is a listed constant of every notebook or of this one."""
    return token in LECTURE or token.lstrip("-") in LECTURE or token in constants(notebook)


def notebooks():
    return sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("path", notebooks(), ids=lambda p: p.stem)
def test_markdown_quotes_only_the_lectures_numbers_and_constants(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    offenders = []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        for token, context in measured_tokens("".join(cell["source"])):
            if not allowed(token, path.name):
                offenders.append(f"cell {index}: {token!r} in '...{context}...'")
    assert offenders == [], (
        f"{path.name}: measured-looking numbers in Markdown (print them from the run, or add a "
        f"constant with its reason):\n" + "\n".join(offenders)
    )


def test_the_detector_flags_measured_numbers_and_passes_the_lectures():
    flagged = [t for t, _ in measured_tokens("GRPO reached 93.7% after 58 steps in 17 s, 5x faster; 0.84 and $3.2$")]
    assert flagged == ["93.7%", "58", "17", "5", "0.84"]
    assert not allowed("93.7%") and allowed("0.84") and allowed("94%")
