"""Any causal LM by path (`rlvr.scale.hf_model`, `python -m rlvr.scale --model PATH`): our GPT-2 saved to a folder and
loaded back through the real loading code, prompts rendered as text, answers judged on their decoded text.

Runs with `-m scale` (needs the [scale] extra).
"""

import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pytest
import torch

from rlvr import scale
from rlvr.scale import cli
from rlvr.task import STOP_ID, encode, prompt_text, sample_prompts, think_answer, verify

pytestmark = [pytest.mark.scale]

CHAT_TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """(warmed-up GPT-2, folder it was saved to with its tokenizer)."""
    model, _ = scale.warm_up(cfg=scale.QUICK_WARM_UP)  # cached: shared with test_scale.py
    folder = scale.save_model(model, scale.build_tokenizer(), tmp_path_factory.mktemp("gpt2") / "model")
    return model, folder


def test_saved_model_loads_back_with_its_tokenizer(saved):
    """from_pretrained gives the same weights, our ids, eos '$', left padding; the prompt is the bare text."""
    model, folder = saved
    loaded, tokenizer = scale.load_causal_lm(folder)
    assert scale.parameter_hash(loaded) == scale.parameter_hash(model)
    digits = sample_prompts(1, np.random.default_rng(0))[0]
    assert scale.render_prompt(tokenizer, digits) == prompt_text(digits)  # no chat template
    assert tokenizer(prompt_text(digits), add_special_tokens=False)["input_ids"] == encode(prompt_text(digits))
    assert tokenizer.eos_token_id == STOP_ID and tokenizer.padding_side == "left"


def test_text_path_samples_and_scores_like_the_id_path(saved):
    """Rendering, tokenizing, generating and judging decoded text reproduce evaluate_model's ids path exactly."""
    model, folder = saved
    loaded, tokenizer = scale.load_causal_lm(folder)
    by_ids = scale.evaluate_model(model, n_prompts=200, seed=5)
    by_text = scale.evaluate_text_model(loaded, tokenizer, n_prompts=200, seed=5)
    assert by_text["accuracy"] == pytest.approx(by_ids["accuracy"], abs=1e-6)
    assert by_text["think_share"] == pytest.approx(by_ids["cot_fraction"], abs=1e-6)
    assert by_text["malformed_share"] == pytest.approx(by_ids["malformed_fraction"], abs=1e-6)
    assert by_text["mean_length"] == pytest.approx(by_ids["mean_length"], abs=1e-4)
    assert 0 < by_text["accuracy"] < 1, "a mix of right and wrong answers makes the comparison informative"


def test_answer_text_stops_at_eos_and_keeps_the_dollar(saved):
    """The verifier sees the answer up to the eos with the eos kept when it is '$', and trimmed of whitespace."""
    _, folder = saved
    _, tokenizer = scale.load_causal_lm(folder)
    digits = sample_prompts(1, np.random.default_rng(1))[0]
    right = think_answer(digits)
    ids = encode(right) + encode("..")  # padding after '$'
    assert scale.answer_text(tokenizer, ids) == right
    reward = scale.VerifierReward(tokenizer)
    got = reward(
        prompts=[prompt_text(digits)], completions=[right[:-1]], completion_ids=[ids], digits=[digits.tolist()]
    )
    assert got == [verify(digits, right).reward] == [1.0]


def test_chat_template_renders_our_instruction(saved):
    """With a chat template the prompt is our instruction as one user message, rendered by that template."""
    _, folder = saved
    _, tokenizer = scale.load_causal_lm(folder)
    tokenizer.chat_template = CHAT_TEMPLATE
    digits = sample_prompts(1, np.random.default_rng(2))[0]
    text = scale.instruction_text(digits)
    assert prompt_text(digits) in text and "#d$" in text
    assert scale.chat_prompt(tokenizer, digits) == [{"role": "user", "content": text}]
    assert scale.render_prompt(tokenizer, digits) == f"<user>{text}<assistant>"
    dataset = scale.build_dataset(2, seed=0, tokenizer=tokenizer)
    assert dataset[0]["prompt"] == scale.chat_prompt(tokenizer, dataset[0]["digits"])


def test_grpo_by_path_on_the_command_line(saved, tmp_path, capsys):
    """`python -m rlvr.scale --model PATH` trains the loaded model with TRL and saves it; metrics come per step."""
    model, folder = saved
    out, report = tmp_path / "trained", tmp_path / "run.json"
    code = cli.main(
        [
            "--model",
            str(folder),
            "--steps",
            "2",
            "--prompts-per-step",
            "8",
            "--group-size",
            "4",
            "--lr",
            "1e-3",
            "--eval-prompts",
            "50",
            "--save",
            str(out),
            "--json",
            str(report),
        ]
    )
    assert code == 0
    result = json.loads(report.read_text())
    assert len(result["history"]) == len(result["step_seconds"]) == 2
    assert all(0 <= h["accuracy"] <= 1 and h["reward"] == pytest.approx(h["accuracy"]) for h in result["history"])
    assert result["before"] is not None and result["after"] is not None
    trained, _ = scale.load_causal_lm(out)
    assert scale.parameter_hash(trained) != scale.parameter_hash(model)
    assert not any(torch.isnan(p).any() for p in trained.parameters())
    assert f"model {folder}" in capsys.readouterr().out


def test_gpu_recipe_in_the_doc_names_real_settings():
    """The doc's GPU recipe (not run here) calls functions that exist with settings TRL's GRPOConfig has."""
    import ast
    import dataclasses
    import inspect
    from pathlib import Path

    from trl import GRPOConfig

    doc = (Path(__file__).resolve().parents[1] / "docs" / "trl_mapping.md").read_text()
    recipe = doc[doc.index("### A GPU recipe") :]
    code = recipe[recipe.index("```python\n") :].split("```")[1].removeprefix("python\n")
    calls = {
        node.func.attr: node
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    }
    assert {"load_causal_lm", "make_trainer", "TRLRunConfig"} <= set(calls)
    run_fields = {f.name for f in dataclasses.fields(scale.TRLRunConfig)}
    assert {k.arg for k in calls["TRLRunConfig"].keywords} <= run_fields
    trainer_args = set(inspect.signature(scale.make_trainer).parameters)
    grpo_fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    unknown = {k.arg for k in calls["make_trainer"].keywords} - trainer_args - grpo_fields
    assert not unknown, f"not GRPOConfig settings: {unknown}"
