"""Any Hugging Face causal LM on our task: load it from a local folder, render our prompts as text, read its answers.

A model that has a chat template gets our task as one user message (`instruction_text`) through that template; a model
without one (our character-level GPT-2) continues the bare prompt `9458073021=`. Answers are decoded with the model's
own tokenizer and judged by `rlvr.task.verify` on that text, so the verifier does not care which tokenizer wrote them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..evaluate import held_out_prompts
from ..task import MAX_NEW_TOKENS, direct_answer, prompt_text, think_answer, verify
from .common import require_scale, verdict_stats

EXAMPLE_DIGITS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 0)


class ModelFolderError(ValueError):
    """A --model path that is not a local Hugging Face model folder (the message is one line)."""


def instruction_text(digits) -> str:
    """Our task in words for an instruct model, with the prompt and one worked example of each answer form."""
    example = prompt_text(EXAMPLE_DIGITS)
    return (
        f"{prompt_text(digits)} Add up the ten digits before '=' and give the last digit of their sum. "
        "Answer in one of two forms and write nothing else: '#d$' where d is that digit, or think first: '[', "
        "the last digit of the running sum after each of the ten digits, then ']#d$'. "
        f"Example: for {example} answer {direct_answer(EXAMPLE_DIGITS)} or {think_answer(EXAMPLE_DIGITS)}"
    )


def has_chat_template(tokenizer) -> bool:
    """Whether the tokenizer carries a chat template."""
    return bool(getattr(tokenizer, "chat_template", None))


def chat_prompt(tokenizer, digits) -> str | list[dict]:
    """The prompt as a dataset holds it: one user message with our instruction if the tokenizer has a chat template
    (TRL and verl render it with that template), else the bare text '9458073021='."""
    if not has_chat_template(tokenizer):
        return prompt_text(digits)
    return [{"role": "user", "content": instruction_text(digits)}]


def render_prompt(tokenizer, digits) -> str:
    """The prompt as the model reads it: our instruction through its chat template, else the bare '9458073021='."""
    prompt = chat_prompt(tokenizer, digits)
    if isinstance(prompt, str):
        return prompt
    return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)


def eos_ids(model, tokenizer) -> list[int]:
    """Every id generation stops at: the model's generation config and the tokenizer's eos."""
    ids = model.generation_config.eos_token_id if model is not None else None
    ids = [] if ids is None else [ids] if isinstance(ids, int) else list(ids)
    if tokenizer.eos_token_id is not None:
        ids.append(tokenizer.eos_token_id)
    return sorted(set(ids))


def until_eos(ids, stop: list[int]) -> list[int]:
    """The ids up to and including the first stop id (all of them if none)."""
    ids = [int(i) for i in ids]
    cut = next((k for k, i in enumerate(ids) if i in stop), len(ids) - 1)
    return ids[: cut + 1]


def answer_text(tokenizer, ids, stop: list[int] | None = None) -> str:
    """The text the verifier judges: the answer decoded up to its eos, special tokens kept (our eos is `$`), trimmed."""
    stop = stop if stop is not None else eos_ids(None, tokenizer)
    return tokenizer.decode(until_eos(ids, stop), skip_special_tokens=False).strip()


def check_model_dir(path) -> Path:
    """The folder as a Path, or ModelFolderError saying in one line why it cannot hold a model."""
    folder = Path(path).expanduser()
    if not folder.exists():
        raise ModelFolderError(f"{path}: no such folder")
    if not folder.is_dir():
        raise ModelFolderError(f"{path}: not a folder (a Hugging Face model folder holds config.json and weights)")
    if not (folder / "config.json").is_file():
        raise ModelFolderError(
            f"{path}: no config.json, so not a Hugging Face model folder (save one with "
            "model.save_pretrained(folder) and tokenizer.save_pretrained(folder))"
        )
    return folder


def quiet_transformers() -> None:
    """No progress bars for loading and saving weights (a 70k-parameter model loads in milliseconds)."""
    from transformers.utils import logging

    logging.disable_progress_bar()


def load_causal_lm(path):
    """(model, tokenizer) from a local folder, offline; the tokenizer pads on the left, with eos if it has no pad."""
    require_scale()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = check_model_dir(path)
    quiet_transformers()
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"  # decoder-only generation pads prompts on the left
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.eval()
    return model, tokenizer


def save_model(model, tokenizer, folder) -> Path:
    """Write model and tokenizer to a folder that `load_causal_lm` (or any `from_pretrained`) reads back."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    quiet_transformers()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@torch.no_grad()
def sample_answers(
    model, tokenizer, digits: np.ndarray, temperature: float = 1.0, seed: int = 0, max_new_tokens: int = MAX_NEW_TOKENS
) -> list[str]:
    """One sampled answer per prompt, as the text the verifier judges (seeds torch's global RNG). digits [n, 10]."""
    was_training, stop = model.training, eos_ids(model, tokenizer)
    model.eval()
    torch.manual_seed(seed)
    batch = tokenizer(
        [render_prompt(tokenizer, d) for d in digits],
        return_tensors="pt",
        padding=True,
        add_special_tokens=False,
        return_token_type_ids=False,
    )  # [n, L]: the template has them all
    sampling = {"do_sample": True, "temperature": temperature, "top_k": 0} if temperature > 0 else {"do_sample": False}
    out = model.generate(
        **batch, max_new_tokens=max_new_tokens, eos_token_id=stop, pad_token_id=tokenizer.pad_token_id, **sampling
    )  # [n, L + T]
    model.train(was_training)
    return [answer_text(tokenizer, row, stop) for row in out[:, batch["input_ids"].shape[1] :]]


def evaluate_text_model(
    model,
    tokenizer,
    n_prompts: int = 300,
    temperature: float = 1.0,
    seed: int = 0,
    max_new_tokens: int = MAX_NEW_TOKENS,
    batch_size: int = 256,
) -> dict[str, float]:
    """Held-out think-first share, accuracy, malformed share and mean length of one sampled answer per prompt."""
    prompts = held_out_prompts(n_prompts)  # [n, 10]
    verdicts = []
    for k, start in enumerate(range(0, n_prompts, batch_size)):
        chunk = prompts[start : start + batch_size]
        texts = sample_answers(model, tokenizer, chunk, temperature, seed + k, max_new_tokens)
        verdicts += [verify(d, t) for d, t in zip(chunk, texts)]
    return verdict_stats(verdicts)
