"""The course's model and task through the Hugging Face interfaces CS336 assignment 5 uses: a `PreTrainedTokenizerFast`
for the task's characters, the TinyTransformer answering `model(input_ids).logits`, and the assignment's
`reward_fn(response, ground_truth)` on our verifier.

Texts: a prompt is `9458073021=` (`rlvr.task.prompt_text`), a response the sampled answer up to its first `$`, and a
ground truth the prompt's ten digits `9458073021` (the verifier derives the answer from them).
"""

from __future__ import annotations

import copy
import functools

import numpy as np
import torch

from ..model import TinyTransformer
from ..task import N_DIGITS, PROMPT_LEN, prompt_text, response_text, verify

A5_HINT = "the a5 checker needs transformers and tokenizers: pip install -e '.[a5]'"


def require_transformers() -> None:
    """ImportError (one line, with the install command) unless transformers and tokenizers import."""
    from ..scale.common import require_hf

    require_hf(A5_HINT)


def task_tokenizer():
    """The task's character tokenizer (one token per character, our ids; eos `$`, pad `.`), padding on the right as
    the assignment's fixtures do."""
    require_transformers()
    from ..scale.tiny_gpt2 import build_tokenizer

    tokenizer = build_tokenizer()
    tokenizer.padding_side = "right"
    return tokenizer


def causal_lm(model: TinyTransformer) -> torch.nn.Module:
    """A TinyTransformer as a transformers `PreTrainedModel` (students' code may check for one): `model(input_ids)`
    returns a CausalLMOutputWithPast whose .logits are [B, L, V]; other arguments (attention_mask, ...) are accepted
    and ignored (the model is causal; the assignment pads on the right). Its parameters are the wrapped model's, so
    an optimizer over either trains both."""
    require_transformers()
    return _classes()[1](_classes()[0](vocab_size=model.cfg.vocab_size, use_cache=False), model)


@functools.cache
def _classes() -> tuple[type, type]:
    """(TaskConfig, TaskLM), defined once transformers is imported."""
    from transformers import PretrainedConfig, PreTrainedModel
    from transformers.modeling_outputs import CausalLMOutputWithPast

    class TaskConfig(PretrainedConfig):
        """The config of the course's model as transformers sees it."""

        model_type = "rlvr_tiny_transformer"

    class TaskLM(PreTrainedModel):
        """The course's TinyTransformer behind the Hugging Face causal-LM interface."""

        config_class = TaskConfig
        base_model_prefix = "model"

        def __init__(self, config, model: TinyTransformer):
            super().__init__(config)
            self.model = model

        def forward(self, input_ids=None, *args, **kwargs):
            """The logits of every position. [B, L] -> .logits [B, L, V]."""
            if input_ids is None:
                raise ValueError("call the model with input_ids: model(input_ids) or model(input_ids=input_ids)")
            return CausalLMOutputWithPast(logits=self.model(torch.as_tensor(input_ids)))

    return TaskConfig, TaskLM


def ground_truth(digits) -> str:
    """The ground truth a reward function reads: the prompt's ten digits, '9458073021'."""
    return "".join(str(int(d)) for d in digits)


def reward_fn(response: str, ground_truth: str) -> dict[str, float]:
    """The assignment's reward function on our verifier: reward 1 for a well-formed answer whose final digit is the
    last digit of the digits' sum; format_reward 1 for a well-formed answer; answer_reward = reward."""
    digits = [int(c) for c in str(ground_truth)[:N_DIGITS] if c.isdigit()]
    verdict = verify(digits, response)
    return {
        "reward": verdict.reward,
        "format_reward": float(verdict.format != "malformed"),
        "answer_reward": verdict.reward,
    }


def rollout_texts(prompts: np.ndarray, responses: torch.Tensor) -> tuple[list[str], list[str], list[str]]:
    """(repeated prompts, responses, repeated ground truths) as the assignment's strings, for prompts [B, 10] (one
    row per answer) and responses [B, T] token ids."""
    prompts = np.asarray(prompts)
    return (
        [prompt_text(p) for p in prompts],
        [response_text(r) for r in responses.tolist()],
        [ground_truth(p) for p in prompts],
    )


def response_positions(n_tokens: int) -> slice:
    """Where an answer's tokens sit in the assignment's labels (the ids without the first): after the prompt's
    PROMPT_LEN tokens, so from label index PROMPT_LEN - 1."""
    return slice(PROMPT_LEN - 1, PROMPT_LEN - 1 + n_tokens)


def fresh_copy(model: TinyTransformer) -> TinyTransformer:
    """A copy of a model to give to untrusted code (its changes stay on the copy)."""
    return copy.deepcopy(model)
