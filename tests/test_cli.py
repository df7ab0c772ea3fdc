"""The command line: sft and train options come from SFTConfig and RLConfig, and every bad value is a usage error
(exit code 2, one `error:` line, no traceback) before anything trains."""

import dataclasses
import os
import subprocess
import sys

import pytest

import rlvr.sft
import rlvr.train
from rlvr import cli
from rlvr.sft import SFT_RULES, SFTConfig
from rlvr.validation import ConfigError
from rlvr.task import MAX_NEW_TOKENS
from rlvr.train import RL_RULES, RLConfig

# field -> values out of its range, as typed on the command line (each one a separate test)
BAD_TRAIN = {
    "algo": ["dpo"],
    "steps": ["-1", "0", "1.5"],
    "prompts_per_step": ["0"],
    "group_size": ["0", "-3"],
    "lr": ["nan", "inf", "0", "-1e-4"],
    "beta": ["-1", "nan"],
    "epochs_per_batch": ["0"],
    "clip_eps": ["-0.2", "0", "nan", "inf"],
    "loss_agg_mode": ["token_median"],
    "advantage_eps": ["-1e-4", "inf"],
    "std": ["sample"],
    "clamp_kl": None,  # a flag (--clamp-kl / --no-clamp-kl): no value to get wrong
    "value_lr": ["0", "nan"],
    "gamma": ["1.5", "-0.1"],
    "lam": ["2", "nan"],
    "length_reward_weight": ["-0.5", "inf"],
    "length_reward_start": ["-1"],
    "temperature": ["-1", "nan"],
    "max_new_tokens": ["0", str(MAX_NEW_TOKENS + 1)],
    "teacher_error_rate": ["1.5", "-0.1", "nan"],
    "sft_seed": ["-1"],
    "seed": ["-1", str(2**64)],
}
BAD_SFT = {
    "teacher_error_rate": ["1.5", "-0.1"],
    "seed": ["-1"],
    "steps": ["0"],
    "batch_size": ["0"],
    "lr": ["nan", "0"],
    "min_lr_ratio": ["1.5", "-0.1"],
    "warmup_steps": ["-1"],
    "think_fraction": ["2", "nan"],
}
BAD_OTHER = [  # non-config options and algorithm-dependent limits
    ["train", "--eval-prompts", "0"],
    ["train", "--eval-prompts", "many"],
    ["train", "--group-size", "1"],  # grpo (the default) needs a group of 2
    ["train", "--algo", "dr_grpo", "--group-size", "1"],
    ["train", "--algo", "rft", "--beta", "0.04"],  # RFT's loss has no KL term: refused, not ignored
    ["sft", "--prompts", "-5"],
    ["sft", "--prompts", "0"],
    ["train", "--json", "/no/such/dir/x.json"],  # an output path that cannot be written: before any training
    ["sft", "--json", "/no/such/dir/x.json"],
    ["reproduce", "--markdown", "/no/such/dir/x.md"],
    ["reproduce", "--json", "/no/such/dir/x.json"],
]


def option(name: str) -> str:
    """The command-line option of a config field."""
    return "--" + name.replace("_", "-")


def bad_argv(command: str, table: dict) -> list:
    """One pytest param per bad value of the table: argv for `python -m rlvr`."""
    return [
        pytest.param([command, option(name), value], id=f"{command} {option(name)} {value}")
        for name, values in table.items()
        for value in values or ()
    ]


@pytest.fixture
def no_training(monkeypatch):
    """Make any attempt to train or load a model fail the test at once (a bad value must stop before)."""

    def refuse(*args, **kwargs):
        raise AssertionError("training started although the options were invalid")

    monkeypatch.setattr(rlvr.train, "run", refuse)
    monkeypatch.setattr(rlvr.sft, "warm_up", refuse)


def assert_usage_error(argv: list, capsys) -> str:
    """main(argv) exits 2 with one `error:` line on stderr and no traceback; returns that line."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2, err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if f"python -m rlvr {argv[0]}: error: " in line]
    assert len(errors) == 1, err
    return errors[0]


@pytest.mark.parametrize("argv", bad_argv("train", BAD_TRAIN) + bad_argv("sft", BAD_SFT))
def test_every_out_of_range_field_is_a_usage_error_naming_its_option(argv, capsys, no_training):
    line = assert_usage_error(argv, capsys)
    assert f"argument {argv[1]}:" in line


@pytest.mark.parametrize("argv", [pytest.param(a, id=" ".join(a)) for a in BAD_OTHER])
def test_bad_non_config_options_and_algorithm_limits_are_usage_errors(argv, capsys, no_training):
    line = assert_usage_error(argv, capsys)
    assert f"argument {argv[-2]}:" in line


def test_output_paths_name_what_is_wrong(tmp_path, capsys, no_training):
    (tmp_path / "a-file").write_text("x")
    folder_line = assert_usage_error(["train", "--json", str(tmp_path)], capsys)
    assert folder_line.endswith(f"argument --json: {tmp_path} is a folder, not a file")
    missing = tmp_path / "missing" / "x.json"
    assert assert_usage_error(["train", "--json", str(missing)], capsys).endswith("does not exist")
    assert not missing.parent.exists()


def test_the_learner_s_command_line_offers_none_of_the_authors_tools(capsys):
    from coursetools.cli import COMMANDS

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    offered = set(cli.build_parser()._subparsers._group_actions[0].choices)
    assert {"sft", "train", "reproduce"} <= offered and offered.isdisjoint(COMMANDS)
    help_text = capsys.readouterr().out
    assert [name for name in COMMANDS if name in help_text] == []
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["notebooks", "check"])  # moved to `python -m coursetools notebooks check`
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "invalid choice: 'notebooks'" in err and "Traceback" not in err


def test_config_errors_name_field_value_and_range(capsys, no_training):
    line = assert_usage_error(["train", "--clip-eps", "-0.2"], capsys)
    assert line.endswith("argument --clip-eps: clip_eps must be a finite number > 0, got -0.2")
    line = assert_usage_error(["train", "--algo", "rft", "--beta", "0.1"], capsys)
    assert "beta must be 0 for rft" in line and line.endswith("got 0.1")


def test_bad_value_tables_cover_every_validated_field():
    assert set(BAD_TRAIN) == set(RL_RULES) == {f.name for f in dataclasses.fields(RLConfig)}
    assert set(BAD_SFT) == set(SFT_RULES) == {f.name for f in dataclasses.fields(SFTConfig)} - {"model"}


@pytest.mark.parametrize("cls, command", [(RLConfig, "train"), (SFTConfig, "sft")])
def test_generated_options_cover_every_field_with_the_dataclass_defaults(cls, command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([command, "--help"])
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    skipped = {"model"} if cls is SFTConfig else set()  # the Transformer's shape: a nested ModelConfig
    for f in dataclasses.fields(cls):
        assert (option(f.name) in help_text) == (f.name not in skipped), f.name
    assert cli.parse_args([command]).config == cls()


def test_every_train_option_reaches_its_field():
    values = {
        "algo": "ppo",
        "steps": 7,
        "prompts_per_step": 5,
        "group_size": 3,
        "lr": 0.01,
        "beta": 0.5,
        "epochs_per_batch": 2,
        "clip_eps": 0.3,
        "loss_agg_mode": "seq_mean_token_mean",
        "advantage_eps": 0.01,
        "std": "unbiased",
        "clamp_kl": False,
        "value_lr": 0.002,
        "gamma": 0.9,
        "lam": 0.95,
        "length_reward_weight": 0.5,
        "length_reward_start": 3,
        "temperature": 0.7,
        "max_new_tokens": 10,
        "teacher_error_rate": 0.2,
        "sft_seed": 1,
        "seed": 2,
    }
    assert set(values) == {f.name for f in dataclasses.fields(RLConfig)}
    assert all(getattr(RLConfig(), name) != value for name, value in values.items())
    argv = ["train", "--no-clamp-kl"] + [
        x for name, value in values.items() if name != "clamp_kl" for x in (option(name), str(value))
    ]
    assert cli.parse_args(argv).config == RLConfig(**values)


def test_every_sft_option_reaches_its_field():
    values = {
        "teacher_error_rate": 0.2,
        "seed": 3,
        "steps": 50,
        "batch_size": 16,
        "lr": 1e-3,
        "min_lr_ratio": 0.0,
        "warmup_steps": 5,
        "think_fraction": 0.25,
    }
    argv = ["sft"] + [x for name, value in values.items() for x in (option(name), str(value))]
    assert cli.parse_args(argv).config == SFTConfig(**values)


def test_existing_option_names_still_work():
    args = cli.parse_args(["sft", "--prompts", "500", "--teacher-error-rate", "0.2", "--seed", "1", "--json", "x"])
    assert (args.prompts, args.json, args.config) == (500, "x", SFTConfig(teacher_error_rate=0.2, seed=1))
    args = cli.parse_args(
        [
            "train",
            "--algo",
            "ppo",
            "--steps",
            "5",
            "--prompts-per-step",
            "4",
            "--group-size",
            "2",
            "--lr",
            "1e-3",
            "--beta",
            "0.1",
            "--epochs-per-batch",
            "3",
            "--clip-eps",
            "0.1",
            "--teacher-error-rate",
            "0.2",
            "--sft-seed",
            "1",
            "--seed",
            "2",
            "--eval-prompts",
            "50",
            "--no-cache",
            "--json",
            "y",
        ]
    )
    assert (args.eval_prompts, args.no_cache, args.json) == (50, True, "y")
    assert args.config == RLConfig(
        algo="ppo",
        steps=5,
        prompts_per_step=4,
        group_size=2,
        lr=1e-3,
        beta=0.1,
        epochs_per_batch=3,
        clip_eps=0.1,
        teacher_error_rate=0.2,
        sft_seed=1,
        seed=2,
    )


@pytest.mark.parametrize(
    "bad",
    [
        dict(steps=1.5),
        dict(clamp_kl="no"),
        dict(seed=True),
        dict(algo=None),
        dict(std=1),
        dict(lr=float("nan")),
        dict(epochs_per_batch=0),
    ],
)
def test_rl_config_refuses_wrong_types_with_a_one_line_message(bad):
    with pytest.raises(ConfigError) as info:
        RLConfig(**bad)
    [(name, value)] = bad.items()
    message = str(info.value)
    assert info.value.field == name and message.startswith(f"{name} must be ") and repr(value) in message
    assert "\n" not in message


def test_sft_config_is_validated_on_replace_too():
    with pytest.raises(ConfigError, match=r"^batch_size must be an integer >= 1, got 0$"):
        dataclasses.replace(SFTConfig(), batch_size=0)


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "--group-size", "0"],
        ["train", "--lr", "nan"],
        ["train", "--algo", "rft", "--beta", "0.1"],
        ["sft", "--prompts", "-5"],
    ],
)
def test_python_m_rlvr_reports_bad_values_without_a_traceback(argv, tmp_path):
    env = {**os.environ, "RLVR_CACHE_DIR": str(tmp_path)}  # nothing may be trained, but never into the real cache
    proc = subprocess.run([sys.executable, "-m", "rlvr", *argv], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "error: argument" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == "" and not any(tmp_path.iterdir())


def test_an_abbreviated_option_is_refused_not_guessed(capsys):
    """`--prompts 5` must not silently mean --prompts-per-step 5."""
    with pytest.raises(SystemExit) as info:
        cli.parse_args(["train", "--prompts", "5"])
    assert info.value.code == 2 and "unrecognized arguments: --prompts" in capsys.readouterr().err


def test_train_warns_when_a_failure_signature_shows_and_again_at_the_end(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("RLVR_CACHE_DIR", str(tmp_path))
    tiny = ["--steps", "25", "--prompts-per-step", "4", "--group-size", "4", "--eval-prompts", "50"]
    assert cli.main(["train", "--temperature", "0", *tiny]) == 0  # greedy: a group's answers are all the same
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 2 and warnings[0] == warnings[1] and "all-equal rewards for 20 steps" in warnings[0]
    assert cli.main(["train", *tiny]) == 0  # sampling at temperature 1: groups differ, nothing to warn about
    assert not [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning: ")]
