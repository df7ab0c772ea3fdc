"""The TRL bridge (`rlvr.scale`): tokenizer, reward function, and a few offline GRPOTrainer steps after a warm-up.

Runs with `-m scale`; needs the [scale] extra (a missing trl/transformers fails, it does not skip). Two processes:
test_scale_processes.py; a model by path: test_scale_hf_model.py; the verl export: test_scale_verl.py.
"""

import copy
import math
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pytest
import torch

from rlvr import scale
from rlvr.task import STOP_ID, VOCAB, direct_answer, encode, prompt_text, sample_prompts, think_answer

pytestmark = [pytest.mark.scale]


@pytest.fixture(scope="module")
def warm_model():
    """A briefly warmed-up GPT-2 (scale.QUICK_WARM_UP: well-formed answers, not the chain). Cached, so the scale test
    files share one warm-up; a fresh checkout (CI's) trains it here, through the training code."""
    model, losses = scale.warm_up(cfg=scale.QUICK_WARM_UP)
    assert all(math.isfinite(x) for x in losses)
    assert losses[-1] < losses[0] - 0.5, "the warm-up did not learn"
    return model


def test_extra_is_installed():
    """The [scale] extra imports (CI installs it before `-m scale`)."""
    import accelerate, datasets, tokenizers, transformers, trl  # noqa: F401,E401

    scale.require_scale()


def test_missing_extra_names_the_install_command(monkeypatch):
    """Without trl, the bridge says how to install the extra."""
    import builtins

    real_import = builtins.__import__

    def no_trl(name, *args, **kwargs):
        if name == "trl":
            raise ImportError("No module named 'trl'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_trl)
    with pytest.raises(ImportError, match=r"pip install -e '\.\[scale\]'"):
        scale.build_model()
    assert scale.build_tokenizer()("12=", add_special_tokens=False)["input_ids"] == encode("12=")  # [a5] is enough


def test_tokenizer_is_one_token_per_character_with_our_ids():
    """Every character is one token with the id rlvr.task uses; decoding inserts no spaces; eos is '$'."""
    tok = scale.build_tokenizer()
    text = "9458073021=[9386636689]#9$"
    assert tok(text, add_special_tokens=False)["input_ids"] == encode(text)
    assert tok.decode(encode(text)) == text
    assert [tok.convert_ids_to_tokens(i) for i in range(len(VOCAB))] == list(VOCAB)
    assert tok.eos_token_id == STOP_ID
    assert tok.pad_token_id != tok.eos_token_id


def test_model_size_matches_ours_and_stops_at_dollar():
    """The GPT-2 has about as many parameters as TinyTransformer and declares '$' as eos."""
    from rlvr.model import TinyTransformer

    model = scale.build_model()
    ours = TinyTransformer().num_parameters()
    assert 0.8 * ours < scale.num_parameters(model) < 1.2 * ours
    assert model.generation_config.eos_token_id == STOP_ID


def test_reward_matches_verifier_and_reads_ids():
    """Right answers get 1 and wrong ones 0; the '$' dropped from TRL's decoded strings is recovered from the ids."""
    rng = np.random.default_rng(3)
    digits = sample_prompts(4, rng)
    wrong = f"#{(int(digits[2].sum()) + 1) % 10}$"  # the last digit of the sum, plus one
    texts = [direct_answer(digits[0]), think_answer(digits[1]), wrong, "#"]
    reward = scale.VerifierReward()
    stripped = [t.replace("$", "") for t in texts]  # what batch_decode(skip_special_tokens=True) returns
    got = reward(
        prompts=[prompt_text(d) for d in digits],
        completions=stripped,
        completion_ids=[encode(t) for t in texts],
        digits=digits.tolist(),
    )
    assert got == [1.0, 1.0, 0.0, 0.0]
    assert reward(prompts=[], completions=stripped[:1], digits=digits[:1].tolist()) == [0.0]  # no ids: no '$'
    assert reward.history[0]["think_share"] == 0.25
    assert reward.history[0]["malformed_share"] == 0.25
    assert reward.prompts[0] == [prompt_text(d) for d in digits]


def test_dataset_has_prompts_and_digits():
    """One row per prompt: the prompt text and its digits."""
    ds = scale.build_dataset(5, seed=1)
    assert len(ds) == 5
    row = ds[0]
    assert row["prompt"] == prompt_text(row["digits"]) and len(row["digits"]) == 10


def test_trl_grpo_steps_after_warm_up(warm_model):
    """A few GRPOTrainer steps offline: finite rewards and loss, answers stop at '$', weights move."""
    import trl  # noqa: F401  (an ImportError fails the test)

    before = copy.deepcopy(warm_model.state_dict())
    pre = scale.evaluate_model(warm_model, n_prompts=200)
    assert pre["malformed_fraction"] < 0.5, "the warm-up should already write well-formed answers"
    cfg = scale.TRLRunConfig(steps=3, prompts_per_step=8, group_size=4, lr=1e-3)
    run = scale.run_grpo(warm_model, cfg)
    assert len(run.history) == cfg.steps and len(run.step_seconds) == cfg.steps
    logs = [e for e in run.trainer.state.log_history if "loss" in e]
    assert len(logs) == cfg.steps
    assert all(math.isfinite(e["loss"]) and math.isfinite(e["reward"]) for e in logs)
    assert all(0.0 <= h["accuracy"] <= 1.0 and h["malformed_share"] < 0.5 for h in run.history)
    for logged, local in zip(run.history, run.local_history):  # one process: the logged means are its own answers'
        assert logged["reward"] == pytest.approx(local["accuracy"], abs=1e-6)
        assert all(logged[k] == pytest.approx(local[k], abs=1e-5) for k in scale.TASK_METRICS)
    assert any(e["reward_std"] > 0 for e in logs), "no group had mixed rewards: nothing to learn from"
    changed = [name for name, w in warm_model.state_dict().items() if not torch.equal(w, before[name])]
    assert changed, "GRPO steps left every weight unchanged"
