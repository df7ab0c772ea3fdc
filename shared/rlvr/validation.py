"""Config validation: what each field of a config dataclass accepts, checked where the config is built."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields
from typing import Callable

from .i18n import _


@dataclass(frozen=True)
class Rule:
    """What one config field accepts: a test, its one-line description and (for strings) the choices."""

    test: Callable[[object], bool]
    allowed: str
    choices: tuple = ()


class ConfigError(ValueError):
    """A config field out of its allowed range; .field names it (the CLI reports it as --field)."""

    def __init__(self, field_name: str, value, allowed: str):
        # in the current language: a rule's `allowed` text is in the catalogue (the CLI's option help lists it)
        text = _("{field} must be {allowed}, got {value}")
        super().__init__(text.format(field=field_name, allowed=_(allowed), value=repr(value)))
        self.field = field_name


def _is_int(v) -> bool:
    """An integer that is not a bool (numpy integers count)."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_finite(v) -> bool:
    """A finite real number that is not a bool (ints and numpy floats count)."""
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


def integer(low: int, high: int | None = None, allowed: str | None = None) -> Rule:
    """An integer >= low (and <= high when given)."""
    text = allowed or (f"an integer >= {low}" if high is None else f"an integer in [{low}, {high}]")
    return Rule(lambda v: _is_int(v) and low <= v and (high is None or v <= high), text)


def number(low: float, high: float = math.inf, ends: str = "[]", allowed: str | None = None) -> Rule:
    """A finite number between low and high; ends ('[]', '(]', '[)', '()') says which ends are allowed."""
    above = (lambda v: v > low) if ends[0] == "(" else (lambda v: v >= low)
    below = (lambda v: v < high) if ends[1] == ")" else (lambda v: v <= high)
    text = allowed or (
        f"a finite number {'>' if ends[0] == '(' else '>='} {low}"
        if high == math.inf
        else f"a number in {ends[0]}{low}, {high}{ends[1]}"
    )
    return Rule(lambda v: _is_finite(v) and above(v) and below(v), text)


def optional(rule: Rule) -> Rule:
    """None or what rule accepts."""
    return Rule(lambda v: v is None or rule.test(v), f"None or {rule.allowed}", rule.choices)


def one_of(choices: tuple) -> Rule:
    """One of the given strings."""
    return Rule(lambda v: isinstance(v, str) and v in choices, "one of " + ", ".join(choices), tuple(choices))


BOOLEAN = Rule(lambda v: isinstance(v, bool), "True or False")
SEED = integer(0, 2**63 - 1, "an integer in [0, 2**63)")


def check_fields(cfg, rules: dict[str, Rule]) -> None:
    """Raise ConfigError for the first field of the dataclass cfg that breaks its rule."""
    for f in fields(cfg):
        value = getattr(cfg, f.name)
        rule = rules.get(f.name)
        if rule is not None and not rule.test(value):
            raise ConfigError(f.name, value, rule.allowed)
