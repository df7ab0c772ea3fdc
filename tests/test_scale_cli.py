"""`python -m rlvr.scale`: bad input is a usage error (exit code 2, one `error:` line, no traceback) before anything
loads or trains. Runs with `-m scale`."""

import subprocess
import sys

import pytest

import rlvr.scale.cli as scale_cli

pytestmark = [pytest.mark.scale]


@pytest.fixture
def no_work(monkeypatch):
    """Any attempt to load, train or export fails the test (a bad value must stop before)."""

    def refuse(*args, **kwargs):
        raise AssertionError("work started although the options were invalid")

    monkeypatch.setattr(scale_cli, "run", refuse)
    monkeypatch.setattr(scale_cli, "export", refuse)


def usage_error(argv: list, capsys) -> str:
    """main(argv) exits 2 with one `error:` line and no traceback; returns that line."""
    with pytest.raises(SystemExit) as exit_info:
        scale_cli.main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2, err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if "error: " in line]
    assert len(errors) == 1, err
    return errors[0]


def bad_run_options(tmp_path):
    """(argv, text the error line must contain) for the GRPO run."""
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "empty").mkdir()
    return [
        (["--processes", "0"], "argument --processes: must be an integer >= 1"),
        (["--processes", "3"], "argument --processes: must divide --prompts-per-step (32)"),
        (["--model", str(tmp_path / "missing")], "no such folder"),
        (["--model", str(tmp_path / "a-file")], "not a folder"),
        (["--model", str(tmp_path / "empty")], "no config.json"),
        (["--group-size", "1"], "argument --group-size: group_size must be >= 2 for grpo"),
        (["--lr", "nan"], "argument --lr: lr must be a finite number > 0"),
        (["--steps", "0"], "argument --steps"),
        (["--eval-prompts", "-1"], "argument --eval-prompts"),
        (["--save", str(tmp_path / "a-file")], "argument --save"),
        (["--json", str(tmp_path)], "argument --json"),
        (["--proc", "2"], "unrecognized arguments"),  # no abbreviations
    ]


def bad_export_options(tmp_path):
    """(argv, text the error line must contain) for export-verl."""
    (tmp_path / "a-file").write_text("x")
    return [
        (["export-verl", str(tmp_path / "a-file")], "is a file, not a folder"),
        (["export-verl", str(tmp_path / "out"), "--algo", "ppo"], "argument --algo: algo must be grpo or dr_grpo"),
        (["export-verl", str(tmp_path / "out"), "--length-reward-weight", "0.1"], "argument --length-reward-weight"),
        (["export-verl", str(tmp_path / "out"), "--group-size", "1"], "argument --group-size"),
        (["export-verl"], "required: OUT"),
    ]


def test_bad_run_options_are_usage_errors(tmp_path, capsys, no_work):
    for argv, expected in bad_run_options(tmp_path):
        line = usage_error(argv, capsys)
        assert expected in line, (argv, line)


def test_bad_export_options_are_usage_errors(tmp_path, capsys, no_work):
    for argv, expected in bad_export_options(tmp_path):
        line = usage_error(argv, capsys)
        assert expected in line, (argv, line)
    assert not (tmp_path / "out").exists(), "nothing is written when the options are bad"


def test_module_entry_point_reports_a_missing_model_folder(tmp_path):
    """`python -m rlvr.scale --model MISSING` as a learner types it: exit 2, one line, no traceback."""
    proc = subprocess.run(
        [sys.executable, "-m", "rlvr.scale", "--model", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.endswith(f"error: argument --model: {tmp_path / 'nope'}: no such folder")
