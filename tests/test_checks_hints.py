"""Every exercise of the module has two hint levels (a nudge naming the idea, then a pointer to the formula), and no
hint contains solution code: math goes in $...$, everything outside it is prose. The scanner is shown to flag code."""

import re

import pytest

from rlvr.checks import Question
from rlvr.checks import nb01, nb02, nb03, nb04, nb05

MODULES = (nb01, nb02, nb03, nb04, nb05)
CODE = [  # what solution code looks like, outside $...$ math
    r"torch\.",
    r"\bnp\.",
    r"\bmath\.",
    r"\bF\.",
    r"clamp",
    r"\.(mean|sum|std|view|reshape|flatten|detach|backward|step|item|exp|log)\(",
    r"\b(minimum|maximum|where|expm1|logsigmoid|comb|repeat_interleave)\(",
    r"\b(zero_grad|logsigmoid|expm1|repeat_interleave)\b",
    r"\breturn\s*\(|^\s*return\b",
    r"\bdef\b",
    r"=",
    r"\[:",
    r"\*\*",
    r"\bkeepdim\b",
    r"\bdim\b",
]


def questions() -> list[tuple[str, Question]]:
    """(module.name, question) for every exercise and free answer of the notebooks' checkers."""
    found = []
    for module in MODULES:
        for name, value in vars(module).items():
            if isinstance(value, Question):
                found.append((f"{module.__name__.split('.')[-1]}.{name}", value))
    return found


def code_in(text: str) -> list[str]:
    """The code-like pieces of a hint outside its $...$ math."""
    prose = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", " ", text, flags=re.S)
    return [match.group(0) for pattern in CODE for match in re.finditer(pattern, prose, flags=re.M)]


QUESTIONS = questions()


def test_every_notebook_module_has_exercises():
    assert {name.split(".")[0] for name, _ in QUESTIONS} == {"nb01", "nb02", "nb03", "nb04", "nb05"}
    assert len(QUESTIONS) >= 20


@pytest.mark.parametrize("name, question", QUESTIONS, ids=[name for name, _ in QUESTIONS])
def test_every_exercise_has_two_hint_levels(name, question):
    assert len([h for h in question.hints if h.strip()]) == 2, name
    assert question.hint(1).text != question.hint(2).text


@pytest.mark.parametrize("name, question", QUESTIONS, ids=[name for name, _ in QUESTIONS])
def test_no_hint_contains_code(name, question):
    for level, text in enumerate(question.hints, start=1):
        assert code_in(text) == [], f"{name}, hint {level}: {code_in(text)}"


@pytest.mark.parametrize(
    "planted",
    [
        "Use `torch.clamp(ratio, 1 - eps, 1 + eps)`.",
        "r = rewards.view(-1, group_size)",
        "Call loss.backward() then optimizer.step().",
        "Take `r.mean(dim=1, keepdim=True)`.",
        "return (r - others).reshape(-1)",
        "np.repeat(prompts, group_size, axis=0)",
    ],
)
def test_the_scanner_flags_planted_code(planted):
    assert code_in(planted)


def test_the_scanner_leaves_math_and_prose_alone():
    assert code_in(r"$A_i = r_i - \frac{1}{G}\sum_j r_j$ within each group, then one advantage per answer.") == []
