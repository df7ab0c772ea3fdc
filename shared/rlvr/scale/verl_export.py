"""Our task for verl: train/test parquet in verl's data format, a reward-function file around our verifier, and the
Hydra overrides that set verl's GRPO to our `RLConfig`.

`export_verl(out, cfg)` writes to the folder `out`:
- `train.parquet`, `test.parquet`: one row per prompt, verl's columns (`data_source`, `prompt` as chat messages,
  `ability`, `reward_model` = {style, ground_truth}, `extra_info`); the ground truth is the prompt's ten digits;
- `reward_fn.py` (`compute_score`, for `custom_reward_function.path`) and `rlvr_task.py`, a copy of `rlvr/task.py`,
  so the verifier runs where verl runs without installing this package;
- `overrides.txt`: one `key=value` per line (the table in docs/trl_mapping.md), and `run_verl.sh`, which passes them
  to `python3 -m verl.trainer.main_ppo` with `MODEL`. Written and checked here; never run here (verl needs a GPU).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .. import task
from ..algorithms import ALGORITHMS, ENGINE_AGGREGATION, algorithm
from ..evaluate import held_out_prompts
from ..task import answer_digits, prompt_text, sample_prompts
from ..train import RLConfig
from ..validation import ConfigError
from .hf_model import instruction_text

DATA_SOURCE = "rlvr/last_digit_sum"
REWARD_FILE, TASK_FILE, OVERRIDES_FILE, RUN_FILE = "reward_fn.py", "rlvr_task.py", "overrides.txt", "run_verl.sh"
MAX_PROMPT_TOKENS = 256  # our instruction (58 words, 32 digits) in a chat template: ~150 tokens (estimated)
ENGINE_SETTINGS = {  # not knobs of ours: a starting point for one GPU (see docs/trl_mapping.md)
    "actor_rollout_ref.rollout.name": "vllm",
    "actor_rollout_ref.rollout.tensor_model_parallel_size": 1,
    "actor_rollout_ref.rollout.gpu_memory_utilization": 0.4,
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": 32,
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": 32,
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": 32,
    "trainer.n_gpus_per_node": 1,
    "trainer.nnodes": 1,
    "trainer.logger": ["console"],
    "trainer.project_name": "rlvr",
    "trainer.val_before_train": True,
    "trainer.test_freq": 10,
    "trainer.save_freq": -1,
}


class ExportError(ValueError):
    """OUT cannot hold the export (the message is one line)."""


def check_exportable(cfg: RLConfig) -> None:
    """Raise ConfigError for a config verl cannot express: an algorithm without verl keys in the table, or a length
    reward."""
    if not algorithm(cfg.algo).verl:
        able = " or ".join(name for name, row in ALGORITHMS.items() if row.verl)
        raise ConfigError("algo", cfg.algo, f"{able} for export-verl (an algorithm the table maps to verl)")
    if cfg.length_reward_weight > 0:
        raise ConfigError(
            "length_reward_weight",
            cfg.length_reward_weight,
            "0 for export-verl (the length reward is not part of the exported verifier)",
        )


def task_rows(digits: np.ndarray, split: str) -> list[dict]:
    """verl's rows for these prompts [n, 10]: our instruction as one user message, the digits as ground truth."""
    return [
        {
            "data_source": DATA_SOURCE,
            "prompt": [{"role": "user", "content": instruction_text(d)}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": "".join(str(int(x)) for x in d)},
            "extra_info": {"split": split, "index": i, "prompt": prompt_text(d), "answer": int(answer_digits(d))},
        }
        for i, d in enumerate(digits)
    ]


def write_parquet(rows: list[dict], path: Path) -> Path:
    """Rows as a parquet file (nested columns become structs and lists, as verl's own preprocessing writes them)."""
    import pandas as pd

    pd.DataFrame(rows).to_parquet(path, index=False)
    return path


REWARD_TEMPLATE = '''"""verl reward function for rlvr's arithmetic task: `rlvr.task.verify` on the answer's text.

Written by `python -m rlvr.scale export-verl`; use it with
    custom_reward_function.path=<this file> custom_reward_function.name=compute_score
ground_truth is the prompt's ten digits ("9458073021"): the verifier recomputes the answer (the last digit of their
sum) and checks the answer's form, '#d$' or '[' + ten running digits + ']#d$'. Reward 1.0 for a well-formed right
answer, else 0.0. The verifier is the copy of rlvr/task.py next to this file.
"""
import importlib.util
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location("rlvr_task_for_verl", Path(__file__).with_name("{task_file}"))
task = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = task  # dataclasses look their module up there
_spec.loader.exec_module(task)


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """verl's reward call: the verdict on the answer text (whitespace around it trimmed) as score and details."""
    verdict = task.verify([int(c) for c in str(ground_truth)], str(solution_str).strip())
    return {{"score": verdict.reward, "acc": float(verdict.correct), "think": float(verdict.format == "think"),
            "malformed": float(verdict.format == "malformed"), "length": verdict.length}}
'''


def write_reward_function(out: Path) -> Path:
    """reward_fn.py and its verifier (a verbatim copy of rlvr/task.py, which imports only numpy and torch)."""
    source = Path(task.__file__).read_text()
    (out / TASK_FILE).write_text("# Copied from rlvr/task.py by `python -m rlvr.scale export-verl`.\n" + source)
    path = out / REWARD_FILE
    path.write_text(REWARD_TEMPLATE.format(task_file=TASK_FILE))
    return path


def verl_overrides(cfg: RLConfig, out) -> dict[str, object]:
    """verl key -> value for our GRPO / Dr. GRPO run (docs/trl_mapping.md lists every key and its source)."""
    check_exportable(cfg)
    out = Path(out).resolve()
    keys = {
        "data.train_files": str(out / "train.parquet"),
        "data.val_files": str(out / "test.parquet"),
        "data.train_batch_size": cfg.prompts_per_step,  # prompts per step
        "data.max_prompt_length": MAX_PROMPT_TOKENS,
        "data.max_response_length": cfg.max_new_tokens,
        "data.seed": cfg.seed,
        "actor_rollout_ref.rollout.n": cfg.group_size,
        "actor_rollout_ref.rollout.temperature": cfg.temperature,
        "actor_rollout_ref.actor.optim.lr": cfg.lr,
        "actor_rollout_ref.actor.optim.weight_decay": 0.0,  # our Adam has none (verl's AdamW: 0.01)
        "actor_rollout_ref.actor.ppo_mini_batch_size": cfg.prompts_per_step,  # one update uses the whole batch
        "actor_rollout_ref.actor.ppo_epochs": cfg.epochs,
        "actor_rollout_ref.actor.clip_ratio": cfg.clip_eps,
        "actor_rollout_ref.actor.clip_ratio_low": cfg.clip_eps,  # verl reads low / high first when they are set
        "actor_rollout_ref.actor.clip_ratio_high": cfg.clip_eps,
        "actor_rollout_ref.actor.loss_agg_mode": ENGINE_AGGREGATION[cfg.aggregation]["verl"],
        "actor_rollout_ref.actor.use_kl_loss": cfg.beta > 0,
        "actor_rollout_ref.actor.kl_loss_coef": cfg.beta,
        "actor_rollout_ref.actor.kl_loss_type": "low_var_kl",  # k3, as ours
        **algorithm(cfg.algo).verl,  # the estimator (and for GRPO, whether it divides by the std)
        "algorithm.use_kl_in_reward": False,
        "trainer.total_training_steps": cfg.steps,
        "trainer.experiment_name": f"{cfg.algo}-G{cfg.group_size}-seed{cfg.seed}",
        "custom_reward_function.path": str(out / REWARD_FILE),
        "custom_reward_function.name": "compute_score",
    }
    if cfg.aggregation == "seq_mean_token_sum_norm":  # Dr. GRPO's token sum is divided by a constant: max_new_tokens
        keys["actor_rollout_ref.actor.loss_scale_factor"] = cfg.max_new_tokens
    return {**keys, **ENGINE_SETTINGS}


def verl_differences(cfg: RLConfig) -> list[str]:
    """What the export leaves at verl's values, which differ from this RLConfig's."""
    notes = ["verl clips the gradient norm at 1.0 (actor.optim.clip_grad), kept for a real model; our loop does not"]
    if algorithm(cfg.algo).advantage != "grpo":  # no std division: the std's kind and epsilon do not matter
        return notes
    if cfg.std == "population":
        notes.append("verl divides by the unbiased std of the group (torch.std); this RLConfig's std is 'population'")
    if cfg.advantage_eps != 1e-6:
        notes.append(f"verl adds 1e-6 to the group std; this RLConfig's advantage_eps is {cfg.advantage_eps:g}")
    return notes


def hydra_value(value) -> str:
    """A value as Hydra's command line reads it: true/false, null, [a, b], numbers, quoted strings when needed."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    return text if re.fullmatch(r"[\w./~:+-]+", text) else "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


RUN_TEMPLATE = """#!/usr/bin/env bash
# GRPO on rlvr's arithmetic task with verl. Written by `python -m rlvr.scale export-verl`; NOT run there (verl needs
# a GPU). MODEL: a local folder of a causal LM with a chat template (an instruct model, e.g. Qwen2.5-0.5B-Instruct).
# Usage: MODEL=/path/to/model bash run_verl.sh [more key=value overrides, which win]
# RLConfig: {config}
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
: "${{MODEL:?set MODEL to a local model folder}}"
mapfile -t OVERRIDES < "$HERE/{overrides}"
exec python3 -m verl.trainer.main_ppo "${{OVERRIDES[@]}}" actor_rollout_ref.model.path="$MODEL" "$@"
"""


def check_out_dir(out) -> Path:
    """OUT as a Path (created if missing), or ExportError if it is a file."""
    folder = Path(out).expanduser()
    if folder.exists() and not folder.is_dir():
        raise ExportError(f"{out}: is a file, not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def export_verl(out, cfg: RLConfig | None = None, n_train: int | None = None, n_test: int = 1000) -> dict[str, Path]:
    """Write everything verl needs to run our task to the folder `out` (see the module's docstring); name -> path.

    n_train defaults to one prompt per row of the run (steps x prompts_per_step, drawn with the TRL bridge's seed
    stream); the test prompts are our held-out set (`rlvr.evaluate.held_out_prompts`).
    """
    cfg = cfg or RLConfig()
    check_exportable(cfg)
    folder = check_out_dir(out)
    train = sample_prompts(n_train or cfg.steps * cfg.prompts_per_step, np.random.default_rng(10_000 + cfg.seed))
    paths = {
        "train": write_parquet(task_rows(train, "train"), folder / "train.parquet"),
        "test": write_parquet(task_rows(held_out_prompts(n_test), "test"), folder / "test.parquet"),
        "reward": write_reward_function(folder),
        "verifier": folder / TASK_FILE,
        "overrides": folder / OVERRIDES_FILE,
        "run": folder / RUN_FILE,
    }
    lines = [f"{key}={hydra_value(value)}" for key, value in verl_overrides(cfg, folder).items()]
    paths["overrides"].write_text("\n".join(lines) + "\n")
    paths["run"].write_text(RUN_TEMPLATE.format(config=cfg.to_dict(), overrides=OVERRIDES_FILE))
    paths["run"].chmod(0o755)
    return paths
