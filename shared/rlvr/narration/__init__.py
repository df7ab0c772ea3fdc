"""What the learner reads, and the lecture next to us: one module per notebook topic (`<topic>.py`), each with the
prose helpers its notebook prints (`*_text`, `*_line`, `print_*`, findings) and `rows(seeds, fast)`, every number
and statement of the lecture that its notebook reproduces next to our measurement (`rlvr.experiments.common.Row`).

`TOPICS` is the one list of the six topics: `python -m rlvr reproduce` and the tests read it. Narration reads the
experiments (`rlvr.experiments`); the experiments never import narration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from rlvr.narration import bandit, gallery, length_bias, ppo_parts, race, thinking


@dataclass(frozen=True)
class Topic:
    """One notebook's topic: its name, its notebook, what its rows cover, and the function that measures them."""

    name: str
    notebook: str
    covers: str
    rows: Callable  # rows(seeds=(0,), fast=None) -> list[Row]


TOPICS: dict[str, Topic] = {
    topic.name: topic
    for topic in (
        Topic("bandit", "01_policy_gradient", "estimators, +5 shift, std amplification (2.1, 4.1, Ex. 1)", bandit.rows),
        Topic("ppo_parts", "02_ppo", "clipping, KL estimators, memory (2.2-2.4, Ex. 2)", ppo_parts.rows),
        Topic("thinking", "03_grpo", "warm-up, GRPO, Dr. GRPO, RFT, pass@k (3, 5, Ex. 3, 6, 7)", thinking.rows),
        Topic("race", "04_ppo_vs_grpo", "PPO vs GRPO-1 vs GRPO-8 (3)", race.rows),
        Topic(
            "length_bias",
            "05_length_bias",
            "length bias, Dr. GRPO, Kimi length reward (4.2, 6.2, Ex. 4, 5, 7d)",
            length_bias.rows,
        ),
        Topic(
            "gallery",
            "06_when_rlvr_breaks",
            "a hackable verifier, greedy sampling, no clip (1, 2.2, 4.1)",
            gallery.rows,
        ),
    )
}
