"""What the checks compare for functions whose output is not a plain tensor: a harness adapts a function (the
student's, our reference, or a mistake of the library) to return what the cases compare, the same way for all three.

- `first`: the first item of a (value, metadata) tuple (the metadata's keys are the student's choice).
- `token_dict`: tokenize_prompt_and_output's dict as (input_ids, labels, response_mask), padding positions left out.
- `log_prob_dict`: get_response_log_probs's dict as (log_probs[, token_entropy]), checking the graph is kept.
- `accumulated`: a microbatch train step called on gradient_accumulation_steps row slices of one batch: (each call's
  returned loss, the gradient accumulated on the log-probs).
- `train_step`: a 2026 grpo_train_step on a fresh small model with SGD(lr=1): (its loss, the parameters' change).

A structure the cases cannot compare (a missing key, no backward pass, no optimizer step) raises WrongOutput, whose one
line the report shows as the function's verdict "wrong".
"""

from __future__ import annotations

from typing import Callable

import torch

from ..i18n import _, join


class WrongOutput(Exception):
    """A student's function returned (or did) something the check cannot compare: one line saying what."""


def _tuple_head(out, what: str):
    """out[0] of a tuple or list, else WrongOutput naming what was expected."""
    if isinstance(out, (tuple, list)) and len(out) >= 1:
        return out[0]
    raise WrongOutput(_("it returned {got}, not a tuple ({what}, metadata)").format(got=type(out).__name__, what=what))


def first(fn: Callable, what: str = "loss") -> Callable:
    """fn's first returned item (the value of a (value, metadata) pair)."""

    def call(*args, **kwargs):
        return _tuple_head(fn(*args, **kwargs), what)

    return call


def pair(fn: Callable) -> Callable:
    """fn's first two returned items: (advantages, raw_rewards) of 2025's compute_group_normalized_rewards."""

    def call(*args, **kwargs):
        out = fn(*args, **kwargs)
        if not isinstance(out, (tuple, list)) or len(out) < 2:
            raise WrongOutput(
                _("it returned {got}, not a tuple (advantages, raw_rewards, metadata)").format(got=type(out).__name__)
            )
        return out[0], out[1]

    return call


def _needs(out, keys: tuple[str, ...], name: str) -> dict:
    """out if it is a dict holding every key, else WrongOutput."""
    if not isinstance(out, dict):
        raise WrongOutput(_("{name} returned {got}, not a dict").format(name=name, got=type(out).__name__))
    missing = [key for key in keys if key not in out]
    if missing:
        raise WrongOutput(
            _("{name} returned a dict without {keys}").format(name=name, keys=join(repr(k) for k in missing))
        )
    return out


def token_dict(fn: Callable) -> Callable:
    """(input_ids, labels, response_mask as bool) of tokenize_prompt_and_output; entries past each row's prompt and
    output (padding) are set to -1 in the ids and False in the mask is kept, so the pad id is not judged."""

    def call(prompt_strs, output_strs, tokenizer):
        out = _needs(fn(prompt_strs, output_strs, tokenizer), ("input_ids", "labels", "response_mask"), "it")
        ids, labels, mask = (torch.as_tensor(out[k]) for k in ("input_ids", "labels", "response_mask"))
        lengths = [
            len(
                tokenizer(p, add_special_tokens=False)["input_ids"]
                + tokenizer(o, add_special_tokens=False)["input_ids"]
            )
            for p, o in zip(prompt_strs, output_strs)
        ]
        if ids.dim() == 2 and labels.shape == ids.shape:
            real = torch.arange(ids.shape[1])[None, :] < torch.tensor(lengths)[:, None] - 1  # [B, L-1]
            ids = torch.where(real, ids.long(), -1)
            labels = torch.where(real, labels.long(), -1)
        return ids, labels, mask.bool()

    return call


def log_prob_dict(fn: Callable) -> Callable:
    """(log_probs[, token_entropy]) of get_response_log_probs; WrongOutput if log_probs lost its graph."""

    def call(model, input_ids, labels, return_token_entropy):
        keys = ("log_probs", "token_entropy") if return_token_entropy else ("log_probs",)
        out = _needs(fn(model, input_ids, labels, return_token_entropy), keys, "it")
        log_probs = out["log_probs"]
        if isinstance(log_probs, torch.Tensor) and not log_probs.requires_grad:
            raise WrongOutput(
                _(
                    "its log_probs carry no gradient (computed under torch.no_grad or detached): the training step "
                    "backpropagates through them"
                )
            )
        return tuple(out[k] for k in keys)

    return call


def _rows(n: int, steps: int) -> list[slice]:
    """`steps` consecutive row slices of n rows."""
    size = -(-n // steps)
    return [slice(start, min(start + size, n)) for start in range(0, n, size)]


def accumulated(fn: Callable) -> Callable:
    """A microbatch train step fn(policy_log_probs, response_mask, gradient_accumulation_steps, *rest) called once per
    row slice of one batch (gradient_accumulation_steps slices, tensors of the rest sliced alike) on one leaf:
    (the returned losses [steps], the gradient accumulated on the log-probs [B, T])."""

    def call(policy_log_probs, response_mask, gradient_accumulation_steps, *rest, **kwargs):
        leaf = policy_log_probs.detach().clone().requires_grad_(True)  # [B, T]
        losses = []
        for rows in _rows(len(leaf), gradient_accumulation_steps):
            sliced = [r[rows] if isinstance(r, torch.Tensor) and r.dim() >= 1 else r for r in rest]
            more = {k: v[rows] if isinstance(v, torch.Tensor) and v.dim() >= 1 else v for k, v in kwargs.items()}
            loss = _tuple_head(
                fn(leaf[rows], response_mask[rows], gradient_accumulation_steps, *sliced, **more), "loss"
            )
            losses.append(torch.as_tensor(loss).detach().float().reshape(()))
        if leaf.grad is None:
            raise WrongOutput(_("it never calls backward(): no gradient reached policy_log_probs"))
        return torch.stack(losses), leaf.grad

    return call


class CountingOptimizer:
    """An optimizer that forwards to the real one and counts step() calls (a student's grpo_train_step gets it)."""

    def __init__(self, optimizer: torch.optim.Optimizer):
        self.optimizer, self.steps = optimizer, 0

    def step(self, *args, **kwargs):
        """The real step, counted."""
        self.steps += 1
        return self.optimizer.step(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.optimizer, name)


def train_step(fn: Callable) -> Callable:
    """A 2026 grpo_train_step called on a deep copy of `model` with SGD(lr=1): (the loss, the parameters' change
    [n_params]); WrongOutput when it does not step the optimizer exactly once or leaves gradients behind."""

    def call(model, tokenizer, *args, **kwargs):
        import copy

        model = copy.deepcopy(model)
        before = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        optimizer = CountingOptimizer(torch.optim.SGD(model.parameters(), lr=1.0))
        loss = _tuple_head(fn(model, tokenizer, optimizer, *args, **kwargs), "loss")
        if optimizer.steps != 1:
            raise WrongOutput(
                _("it called optimizer.step() {n} times; a train step steps once, after every microbatch").format(
                    n=optimizer.steps
                )
            )
        if any(p.grad is not None and bool(p.grad.any()) for p in model.parameters()):
            raise WrongOutput(_("it leaves gradients on the parameters: clear them after optimizer.step()"))
        after = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        return torch.as_tensor(loss).detach().float().reshape(()), after - before

    return call
