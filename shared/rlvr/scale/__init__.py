"""Beyond our own loop: our arithmetic task on Hugging Face TRL (one or several processes, any causal LM) and on verl.

- `tiny_gpt2`: a ~70k-parameter GPT-2 and a character tokenizer built in code (our ids), and its warm-up;
- `hf_model`: any Hugging Face causal LM from a local folder: prompts rendered as text, answers read as text;
- `trl_bridge`: our prompts, verifier and knobs on `trl.GRPOTrainer`;
- `processes`: the same GRPO on several CPU processes (gloo);
- `verl_export`: parquet data, a reward-function file and config overrides for verl;
- `cli`: `python -m rlvr.scale` (see `python -m rlvr.scale --help`).

Everything runs offline. Needs the optional extra: pip install -e '.[scale]'. docs/trl_mapping.md maps our knobs to
TRL's and verl's.
"""

from .cli import main
from .common import INSTALL_HINT, require_scale, verdict_stats
from .hf_model import (
    ModelFolderError,
    answer_text,
    chat_prompt,
    check_model_dir,
    evaluate_text_model,
    instruction_text,
    load_causal_lm,
    render_prompt,
    sample_answers,
    save_model,
)
from .processes import RankResult, parameter_hash, run_processes
from .tiny_gpt2 import (
    QUICK_WARM_UP,
    GPT2Shape,
    ScaleWarmUpConfig,
    build_model,
    build_tokenizer,
    evaluate_model,
    generate,
    num_parameters,
    sft_loss,
    train_warm_up,
    warm_up,
)
from .trl_bridge import (
    TASK_METRICS,
    TRLRun,
    TRLRunConfig,
    VerifierReward,
    build_dataset,
    completion_text,
    grpo_config,
    make_trainer,
    run_grpo,
    step_history,
)
from .verl_export import export_verl, verl_overrides

__all__ = [
    "INSTALL_HINT",
    "QUICK_WARM_UP",
    "TASK_METRICS",
    "GPT2Shape",
    "ModelFolderError",
    "RankResult",
    "ScaleWarmUpConfig",
    "TRLRun",
    "TRLRunConfig",
    "VerifierReward",
    "answer_text",
    "build_dataset",
    "build_model",
    "build_tokenizer",
    "chat_prompt",
    "check_model_dir",
    "completion_text",
    "evaluate_model",
    "evaluate_text_model",
    "export_verl",
    "generate",
    "grpo_config",
    "instruction_text",
    "load_causal_lm",
    "main",
    "make_trainer",
    "num_parameters",
    "parameter_hash",
    "render_prompt",
    "require_scale",
    "run_grpo",
    "run_processes",
    "sample_answers",
    "save_model",
    "sft_loss",
    "step_history",
    "train_warm_up",
    "verdict_stats",
    "verl_overrides",
    "warm_up",
]
