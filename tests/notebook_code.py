"""Run a function the solution notebooks define, from its source (tests check the learner-facing code itself)."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def solution_functions(notebook: str, starts_with: str, namespace: dict) -> dict:
    """Execute the code cell of solutions/`notebook` that starts with `starts_with` in `namespace`; return it."""
    nb = json.loads((ROOT / "solutions" / notebook).read_text(encoding="utf-8"))
    source = next("".join(c["source"]) for c in nb["cells"] if "".join(c["source"]).startswith(starts_with))
    exec(source, namespace)  # noqa: S102 - our own notebook's code
    return namespace
