"""The table of RL algorithms: one row per algorithm (REINFORCE, GRPO, Dr. GRPO, RLOO, RFT, PPO, GSPO, CISPO), read by
the trainer,
the config's checks, the CLI, the figures' labels and the TRL / verl mapping. Adding an algorithm is adding a row
(docs/authoring.md, "Adding an algorithm"): `rlvr.train.Trainer` never branches on an algorithm's name."""

from __future__ import annotations

from dataclasses import dataclass, field

from .objectives import ADVANTAGE_KINDS, AGGREGATIONS, RATIO_LOSSES

VALUE_MODEL = "gae"  # the advantage of a value model: GAE over per-token shaped rewards (PPO)
KL_PLACES = ("loss", "reward", "none")  # where beta * KL goes
# objectives.RATIO_LOSSES (PPO's clipped ratio x advantage, GSPO's per-answer ratio, CISPO's capped weight); "rft": SFT
# on the correct answers (advantages unused)
OBJECTIVES = (*RATIO_LOSSES, "rft")


@dataclass(frozen=True)
class Algorithm:
    """One row of the table: what a training algorithm is made of."""

    name: str  # RLConfig.algo
    label: str  # how figures and tables name it
    advantage: str  # an objectives.ADVANTAGE_KINDS estimator on the group's rewards, or VALUE_MODEL
    objective: str  # one of OBJECTIVES (a ratio loss of objectives.RATIO_LOSSES, or "rft")
    aggregation: str  # how the per-token loss becomes one number (objectives.AGGREGATIONS; RLConfig.loss_agg_mode)
    updates_per_batch: int  # the default of RLConfig.epochs_per_batch
    kl: str  # where beta * KL goes (KL_PLACES): the per-token loss (k3), the per-token reward (AlpacaFarm), nowhere
    min_group_size: int = 1  # 2 when the baseline comes from the other answers to the prompt
    paper: str = ""
    trl: dict | None = None  # trl.GRPOConfig settings that express it besides loss_type (None: GRPOTrainer cannot)
    verl: dict = field(default_factory=dict)  # verl keys that express it (empty: export-verl refuses it)

    @property
    def value_model(self) -> bool:
        """Whether the algorithm trains a value model for its advantages."""
        return self.advantage == VALUE_MODEL


_GRPO = {"algorithm.adv_estimator": "grpo"}  # verl's GRPO estimator, with or without the std division
# fmt: off
ALGORITHMS: dict[str, Algorithm] = {row.name: row for row in (
    #          name         label        advantage     objective aggregation                updates kl      min G
    Algorithm("reinforce", "REINFORCE", "none",       "clip", "seq_mean_token_sum_norm", 1, "loss",   1,
              paper="Williams 1992"),
    Algorithm("grpo",      "GRPO",      "grpo",       "clip", "seq_mean_token_mean",     1, "loss",   2,
              paper="Shao et al. 2024 (DeepSeekMath)",
              trl={"scale_rewards": "group"}, verl={**_GRPO, "algorithm.norm_adv_by_std_in_grpo": True}),
    Algorithm("dr_grpo",   "Dr. GRPO",  "mean",       "clip", "seq_mean_token_sum_norm", 1, "loss",   2,
              paper="Liu et al. 2025 (Understanding R1-Zero-Like Training)",
              trl={"scale_rewards": "none"}, verl={**_GRPO, "algorithm.norm_adv_by_std_in_grpo": False}),
    Algorithm("rloo",      "RLOO",      "rloo",       "clip", "seq_mean_token_sum_norm", 1, "loss",   2,
              paper="Ahmadian et al. 2024 (Back to Basics)", verl={"algorithm.adv_estimator": "rloo"}),
    Algorithm("rft",       "RFT",       "none",       "rft",  "token_mean",              1, "none",   1,
              paper="Yuan et al. 2023 (rejection-sampling fine-tuning)"),
    Algorithm("ppo",       "PPO",       VALUE_MODEL,  "clip", "token_mean",              8, "reward", 1,
              paper="Schulman et al. 2017; AlpacaFarm (Dubois et al. 2023)"),
    Algorithm("gspo",      "GSPO",      "grpo",       "gspo", "seq_mean_token_mean",     1, "loss",   2,
              paper="Zheng et al. 2025 (Group Sequence Policy Optimization, arXiv:2507.18071)"),
    Algorithm("cispo",     "CISPO",     "grpo",       "cispo", "token_mean",             1, "loss",   2,
              paper="MiniMax et al. 2025 (MiniMax-M1, arXiv:2506.13585)"),
)}
# fmt: on
# The rows other modules name (by row, never by a string of their own): the lecture's losses and its comparisons.
GRPO, DR_GRPO, RFT, PPO = (ALGORITHMS[name] for name in ("grpo", "dr_grpo", "rft", "ppo"))

# How TRL (GRPOConfig.loss_type) and verl (actor.loss_agg_mode) name each of our aggregations (docs/trl_mapping.md).
ENGINE_AGGREGATION = {
    "seq_mean_token_mean": {"trl": "grpo", "verl": "seq-mean-token-mean"},
    "seq_mean_token_sum_norm": {"trl": "dr_grpo", "verl": "seq-mean-token-sum-norm"},  # / max length, as ours
    "token_mean": {"trl": "dapo", "verl": "token-mean"},  # DAPO's; TRL's default ("bnpo" on one process)
}

# A loss term -> whether it adds exactly 0, value and gradient, for an answer whose advantage is 0. A new term (an
# entropy bonus, say) goes here; the skip rule below then stays right by itself.
SILENT_AT_ZERO_ADVANTAGE = {"clip": True, "gspo": True, "cispo": True, "rft": False, "kl": False}


def algorithm(name: str) -> Algorithm:
    """The row of one algorithm (ValueError naming the choices for an unknown name)."""
    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; choose from {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]


def loss_terms(algo: str, beta: float = 0.0) -> tuple[str, ...]:
    """The terms of one update's loss: the algorithm's objective, plus the KL when it goes in the loss."""
    row = algorithm(algo)
    return (row.objective,) + (("kl",) if beta > 0 and row.kl == "loss" else ())


def trains_every_answer(algo: str, beta: float = 0.0) -> bool:
    """The skip rule's one owner: False when an update may leave the groups whose advantages are all 0 out of the
    backward pass (`rlvr.model.update_logps`), because each answer has one advantage and every loss term is silent at
    a zero advantage. (With several updates per batch those groups still go through the model, forward only: the
    ratio diagnostics watch every answer.)"""
    row = algorithm(algo)
    silent = all(SILENT_AT_ZERO_ADVANTAGE[term] for term in loss_terms(algo, beta))
    return row.value_model or not silent


def check_table() -> None:
    """Raise ValueError if a row names an estimator, aggregation, objective or KL place the package does not have."""
    for row in ALGORITHMS.values():
        known = (
            row.advantage in ADVANTAGE_KINDS + (VALUE_MODEL,),
            row.aggregation in AGGREGATIONS and set(ENGINE_AGGREGATION) == set(AGGREGATIONS),
            row.objective in OBJECTIVES and row.objective in SILENT_AT_ZERO_ADVANTAGE,
            row.kl in KL_PLACES and (row.kl != "reward" or row.value_model),  # the shaped reward feeds GAE
        )
        if not all(known):
            raise ValueError(f"algorithm {row.name!r}: a column names something rlvr.objectives does not have")


check_table()
