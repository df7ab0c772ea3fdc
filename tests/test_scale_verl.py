"""The verl export (`python -m rlvr.scale export-verl OUT/`): parquet in verl's data format, a reward-function file that
gives our verifier's verdicts, and overrides whose every key verl knows.

verl itself cannot run here (it needs a GPU, ray and vLLM); `pip install --no-deps verl` installs its files, and its
default config (`verl/trainer/config/_generated_ppo_trainer.yaml`) is read without importing verl. Without verl the keys
are checked against the list in docs/trl_mapping.md, which is checked against verl's config whenever verl is there.
Runs with `-m scale`.
"""

import importlib.metadata
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rlvr import scale
from rlvr.evaluate import held_out_prompts
from rlvr.scale import cli, verl_export
from rlvr.task import answer_digits, decode, prompt_text, teacher_chain, verify
from rlvr.train import RLConfig

pytestmark = [pytest.mark.scale]

DOC = Path(__file__).resolve().parents[1] / "docs" / "trl_mapping.md"
CONFIG = RLConfig(steps=5, prompts_per_step=8, group_size=4)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The export of a 5-step, 8-prompt GRPO config with 64 test prompts, written by the command line."""
    out = tmp_path_factory.mktemp("verl") / "out"
    assert (
        cli.main(
            [
                "export-verl",
                str(out),
                "--steps",
                "5",
                "--prompts-per-step",
                "8",
                "--group-size",
                "4",
                "--test-prompts",
                "64",
            ]
        )
        == 0
    )
    return out


def load_reward_function(path: Path):
    """compute_score from the exported file, imported by path as verl does (custom_reward_function.path)."""
    spec = importlib.util.spec_from_file_location("exported_reward_fn", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.compute_score


def read_overrides(path: Path) -> dict[str, str]:
    """key -> value text of an overrides.txt."""
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


def doc_keys() -> set[str]:
    """The verl keys listed in docs/trl_mapping.md: the first cell of each row of the table headed `| verl key |`."""
    text = DOC.read_text()
    table = text[text.index("\n| verl key |") :].split("\n\n")[0]
    return set(re.findall(r"^\| `([\w.]+)` \|", table, flags=re.M))


def verl_default_keys() -> set[str] | None:
    """Every dotted leaf key of the installed verl's flattened default config, or None if verl is not installed."""
    try:
        dist = importlib.metadata.distribution("verl")
    except importlib.metadata.PackageNotFoundError:
        return None
    import yaml

    path = Path(dist.locate_file("verl/trainer/config/_generated_ppo_trainer.yaml"))
    if not path.is_file():
        return None

    def walk(node, prefix=""):  # the leaves: a key naming a whole sub-config does not take a value
        for key, value in node.items():
            if isinstance(value, dict) and value:
                yield from walk(value, prefix + key + ".")
            else:
                yield prefix + key

    return set(walk(yaml.safe_load(path.read_text())))


def test_parquet_files_hold_verls_columns(exported):
    """train / test load with pandas and pyarrow; one row per prompt in verl's columns, the digits as ground truth."""
    import pandas as pd
    import pyarrow.parquet as pq

    train, test = pd.read_parquet(exported / "train.parquet"), pd.read_parquet(exported / "test.parquet")
    assert len(train) == CONFIG.steps * CONFIG.prompts_per_step and len(test) == 64
    assert {"data_source", "prompt", "ability", "reward_model", "extra_info"} <= set(
        pq.read_schema(exported / "train.parquet").names
    )
    expected_test = held_out_prompts(64)
    for frame, split in ((train, "train"), (test, "test")):
        assert set(frame["data_source"]) == {verl_export.DATA_SOURCE}
        for i, row in frame.iterrows():
            digits = [int(c) for c in row["reward_model"]["ground_truth"]]
            assert len(digits) == 10 and row["reward_model"]["style"] == "rule"
            messages = list(row["prompt"])
            assert [m["role"] for m in messages] == ["user"]
            assert messages[0]["content"] == scale.instruction_text(digits)
            assert row["extra_info"]["split"] == split and row["extra_info"]["index"] == i
            assert row["extra_info"]["prompt"] == prompt_text(digits)
            assert row["extra_info"]["answer"] == int(answer_digits(np.array(digits)))
    assert [
        [int(c) for c in gt] for gt in test["reward_model"].map(lambda r: r["ground_truth"])
    ] == expected_test.tolist()
    assert len(set(train["reward_model"].map(lambda r: r["ground_truth"]))) > 0.9 * len(train)


def test_reward_function_gives_the_verifiers_verdicts(exported):
    """On answers our GPT-2 samples for the exported prompts (and on teacher chains), compute_score == verify."""
    import pandas as pd

    compute_score = load_reward_function(exported / "reward_fn.py")
    model, _ = scale.warm_up(cfg=scale.QUICK_WARM_UP)  # cached: shared with test_scale.py
    rows = pd.read_parquet(exported / "train.parquet")
    digits = np.array([[int(c) for c in r["ground_truth"]] for r in rows["reward_model"]])  # [40, 10]
    from rlvr.task import prompt_tokens

    answers = [decode(r) for r in scale.generate(model, prompt_tokens(np.repeat(digits, 4, axis=0)), seed=3)]
    rng = np.random.default_rng(0)
    answers += [teacher_chain(d, 0.3, rng) for d in digits]  # right and wrong chains, some right answers
    truths = [gt for gt in rows["reward_model"].map(lambda r: r["ground_truth"]) for _ in range(4)]
    truths += list(rows["reward_model"].map(lambda r: r["ground_truth"]))
    scores, verdicts = [], []
    for truth, answer in zip(truths, answers):
        got = compute_score(verl_export.DATA_SOURCE, answer, truth, extra_info={})
        want = verify([int(c) for c in truth], answer.strip())
        assert got["score"] == want.reward and got["acc"] == float(want.correct), (truth, answer)
        assert got["think"] == float(want.format == "think") and got["malformed"] == float(want.format == "malformed")
        scores.append(got["score"])
        verdicts.append(want.format)
    assert 0 < sum(scores) < len(scores), "both right and wrong answers must be among the samples"
    assert {"think", "direct"} <= set(verdicts)


def test_reward_function_runs_without_this_package(exported):
    """reward_fn.py and its copy of the verifier need numpy and torch only: it works where rlvr is not installed."""
    code = (
        "import sys, importlib.util\n"
        "sys.modules['rlvr'] = None  # any import of rlvr now fails\n"
        f"spec = importlib.util.spec_from_file_location('r', {str(exported / 'reward_fn.py')!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "import json; print(json.dumps([m.compute_score('x', ' #9$ ', '9000000000'),"
        " m.compute_score('x', '#9', '9000000000')]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    right, no_stop = json.loads(proc.stdout.strip().splitlines()[-1])
    assert right["score"] == 1.0 and no_stop["score"] == 0.0 and no_stop["malformed"] == 1.0


def test_overrides_map_our_config():
    """Each RLConfig knob lands on its verl key (GRPO and Dr. GRPO + KL)."""
    dr = RLConfig(
        algo="dr_grpo",
        beta=0.04,
        group_size=4,
        prompts_per_step=16,
        lr=3e-6,
        clip_eps=0.3,
        steps=7,
        epochs_per_batch=2,
        temperature=0.7,
        max_new_tokens=12,
        seed=3,
    )
    keys = verl_export.verl_overrides(dr, "/tmp/x")
    assert keys["actor_rollout_ref.rollout.n"] == 4 and keys["actor_rollout_ref.rollout.temperature"] == 0.7
    assert keys["data.train_batch_size"] == keys["actor_rollout_ref.actor.ppo_mini_batch_size"] == 16
    assert keys["actor_rollout_ref.actor.optim.lr"] == 3e-6 and keys["actor_rollout_ref.actor.ppo_epochs"] == 2
    assert {keys[f"actor_rollout_ref.actor.clip_ratio{s}"] for s in ("", "_low", "_high")} == {0.3}
    assert keys["actor_rollout_ref.actor.use_kl_loss"] is True and keys["actor_rollout_ref.actor.kl_loss_coef"] == 0.04
    assert keys["algorithm.norm_adv_by_std_in_grpo"] is False
    assert keys["actor_rollout_ref.actor.loss_agg_mode"] == "seq-mean-token-sum-norm"
    assert keys["actor_rollout_ref.actor.loss_scale_factor"] == 12 and keys["data.max_response_length"] == 12
    assert keys["trainer.total_training_steps"] == 7 and keys["data.seed"] == 3
    grpo = verl_export.verl_overrides(RLConfig(), "/tmp/x")
    assert grpo["algorithm.norm_adv_by_std_in_grpo"] is True and grpo["actor_rollout_ref.actor.use_kl_loss"] is False
    assert grpo["actor_rollout_ref.actor.loss_agg_mode"] == "seq-mean-token-mean"
    assert "actor_rollout_ref.actor.loss_scale_factor" not in grpo


def test_override_file_is_hydra_syntax(exported):
    """One key=value per line: booleans lower-case, lists bracketed, paths absolute and pointing at the export."""
    written = read_overrides(exported / "overrides.txt")
    assert written["custom_reward_function.path"] == str((exported / "reward_fn.py").resolve())
    assert written["data.train_files"] == str((exported / "train.parquet").resolve())
    assert written["algorithm.use_kl_in_reward"] == "false" and written["trainer.logger"] == "[console]"
    assert verl_export.hydra_value("a b") == "'a b'" and verl_export.hydra_value(None) == "null"
    assert "overrides.txt" in (exported / "run_verl.sh").read_text()


def test_every_override_key_exists_in_verl(exported):
    """The doc lists exactly the keys the export writes, and verl's default config has every one of them."""
    written = set(read_overrides(exported / "overrides.txt"))
    every = written | set(verl_export.verl_overrides(RLConfig(algo="dr_grpo", beta=0.04), exported))
    listed = doc_keys()
    assert every == listed, f"in the export, not the doc: {every - listed}; in the doc only: {listed - every}"
    known = verl_default_keys()
    if known is None:
        print("verl is not installed: keys checked against docs/trl_mapping.md only")
        return
    print(f"verl {importlib.metadata.version('verl')}: keys checked against its default config")
    assert every <= known, f"keys verl does not know: {sorted(every - known)}"
