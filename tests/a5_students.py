"""Fixture student checkouts of CS336 assignment 5 for tests/test_a5.py: copies of tests/fixtures/a5_2025 and a5_2026
with mistakes planted in the copy (PLANTED), loaded in this process (`load_student`), or run through the CLI."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
CORRECT = {"2025": FIXTURES / "a5_2025", "2026": FIXTURES / "a5_2026"}
MODULE = {"2025": "cs336_alignment/grpo.py", "2026": "cs336_alignment/rl.py"}


@dataclass(frozen=True)
class Planted:
    """A mistake planted in a correct checkout: in `function`, replace `old` by `new`; the checker should name
    `mistake` (a name of rlvr.a5.library's entries for that function)."""

    edition: str
    function: str
    old: str
    new: str
    mistake: str

    @property
    def id(self) -> str:
        """A test id."""
        return f"{self.edition}-{self.function}-{self.mistake}"


def P(edition, function, old, new, mistake) -> Planted:
    """One planted mistake."""
    return Planted(edition, function, old, new, mistake)


PLANTED = [  # one or more per function, each written the way a student writes it (not the library's code)
    P("2025", "compute_group_normalized_rewards", "grouped.std(dim=1, keepdim=True)",
      "grouped.std(dim=1, keepdim=True, unbiased=False)", "population_std"),
    P("2025", "compute_group_normalized_rewards", "+ advantage_eps)", ")", "eps_ignored"),
    P("2025", "compute_group_normalized_rewards", "centered = grouped - grouped.mean(dim=1, keepdim=True)",
      "centered = grouped.mean(dim=1, keepdim=True) - grouped", "sign"),
    P("2025", "compute_group_normalized_rewards", "    if normalize_by_std:\n", "    if False:\n",
      "ignores_normalize_by_std"),
    P("2025", "compute_naive_policy_gradient_loss", "return -raw_rewards_or_advantages * policy_log_probs",
      "return raw_rewards_or_advantages * policy_log_probs", "sign"),
    P("2025", "compute_grpo_clip_loss", "loss = -torch.min(unclipped, clipped)",
      "loss = -torch.max(unclipped, clipped)", "max_not_min"),
    P("2025", "compute_grpo_clip_loss", "torch.clamp(ratio, 1 - cliprange, 1 + cliprange)",
      "torch.clamp(ratio, max=1 + cliprange)", "upper_clip_only"),
    P("2025", "compute_grpo_clip_loss", "ratio = torch.exp(policy_log_probs - old_log_probs)",
      "ratio = torch.exp(old_log_probs - policy_log_probs)", "ratio_inverted"),
    P("2025", "compute_policy_gradient_loss",
      "return compute_naive_policy_gradient_loss(raw_rewards, policy_log_probs), {}",
      "return compute_naive_policy_gradient_loss(advantages, policy_log_probs), {}", "no_baseline_uses_advantages"),
    P("2025", "masked_mean", "return (tensor * mask).sum(dim=dim) / mask.sum(dim=dim)",
      "return (tensor * mask).sum(dim=dim) / mask.sum()", "total_count_for_dim"),
    P("2025", "masked_normalize", "return total / normalize_constant", "return total * normalize_constant",
      "multiplies"),
    P("2025", "compute_entropy", "log_p = torch.nn.functional.log_softmax(logits, dim=-1)\n    return",
      "log_p = torch.log(torch.softmax(logits, dim=-1))\n    return", "log_of_softmax"),
    P("2025", "tokenize_prompt_and_output", '"response_mask": mask[:, 1:]', '"response_mask": mask[:, :-1]',
      "mask_not_shifted"),
    P("2025", "get_response_log_probs", "labels.unsqueeze(-1)", "input_ids.unsqueeze(-1)", "reads_input_ids"),
    P("2025", "sft_microbatch_train_step", "loss = loss / batch_size / gradient_accumulation_steps",
      "loss = loss / gradient_accumulation_steps", "one_division"),
    P("2025", "grpo_microbatch_train_step", "    loss = loss / gradient_accumulation_steps\n", "",
      "not_divided_by_accumulation"),
    P("2025", "grpo_microbatch_train_step", "masked_mean(per_token, response_mask, dim=-1).mean()",
      "masked_mean(per_token, response_mask)", "token_mean"),
    P("2026", "tokenize_prompt_and_output", '"response_mask": response_mask[:, 1:]',
      '"response_mask": response_mask[:, :-1]', "mask_not_shifted"),
    P("2026", "get_response_log_probs", "log_probs.gather(2, labels[:, :, None])",
      "log_probs.gather(2, input_ids[:, :, None])", "reads_input_ids"),
    P("2026", "compute_rollout_rewards", "infos = [reward_fn(r, t) for", "infos = [reward_fn(t, r) for",
      "swapped_arguments"),
    P("2026", "compute_group_normalized_rewards", "adv / (groups.std(dim=-1, keepdim=True) + advantage_eps)",
      "adv / (groups.std(dim=-1, keepdim=True, correction=0) + advantage_eps)", "population_std"),
    P("2026", "compute_group_normalized_rewards", "adv = adv / (means + advantage_eps)",
      "adv = adv / (groups.std(dim=-1, keepdim=True) + advantage_eps)", "mean_normalizer_is_std"),
    P("2026", "compute_policy_gradient_loss",
      "seq = torch.exp((log_ratio * mask).sum(-1, keepdim=True) / mask.sum(-1, keepdim=True))",
      "seq = log_ratio.exp()", "gspo_per_token"),
    P("2026", "compute_policy_gradient_loss", "weight = log_ratio.exp().clamp(max=1 + cliprange).detach()",
      "weight = log_ratio.exp().clamp(max=1 + cliprange)", "cispo_not_detached"),
    P("2026", "compute_policy_gradient_loss",
      "objective = torch.min(ratio * adv, ratio.clamp(1 - cliprange, 1 + cliprange) * adv)",
      "objective = torch.max(ratio * adv, ratio.clamp(1 - cliprange, 1 + cliprange) * adv)", "max_not_min"),
    P("2026", "aggregate_loss_across_microbatch", "return (total.sum(-1) / mask.sum(-1)).mean()",
      "return total.sum() / mask.sum()", "token_mean"),
    P("2026", "grpo_train_step", "loss = loss * (end - start) / n", "loss = loss * 1", "unweighted_microbatches"),
    P("2026", "grpo_train_step", "torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)", "pass",
      "grad_not_clipped"),
]  # fmt: skip


def copy_correct(edition: str, into: Path) -> Path:
    """A copy of the correct fixture checkout of an edition."""
    target = Path(into) / f"student_{edition}"
    shutil.copytree(CORRECT[edition], target)
    return target


def plant(root: Path, edition: str, old: str, new: str) -> None:
    """Replace `old` (which must occur exactly once) by `new` in the copy's package module."""
    path = Path(root) / MODULE[edition]
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {path}"
    path.write_text(text.replace(old, new))


def load_student(root: Path, edition: str) -> dict:
    """The copy's run_* adapters by the assignment's name, imported in this process under fresh module names (the
    fixture's `cs336_alignment` is dropped from sys.modules first, so variants do not share it)."""
    from rlvr.cs336 import EDITIONS

    for name in [m for m in sys.modules if m == "cs336_alignment" or m.startswith("cs336_alignment.")]:
        del sys.modules[name]
    sys.path.insert(0, str(root))
    try:
        spec = importlib.util.spec_from_file_location(f"a5_adapters_{id(root)}", Path(root) / "tests" / "adapters.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(root))
    return {name: getattr(module, f"run_{name}") for name in EDITIONS[edition] if hasattr(module, f"run_{name}")}
