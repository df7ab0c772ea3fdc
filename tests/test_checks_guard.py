"""Running a learner's function safely (rlvr.checks.guard): a time limit that stops sleeping and looping functions in
the main thread and in other threads, output kept to a few lines, every exception caught (SystemExit included), the
SIGALRM handler and timer put back, torch's global state restored; and a check that survives all of it."""

import signal
import sys
import threading
import time

import pytest
import torch

from rlvr.checks import Case, Exercise, Outcome
from rlvr.checks.guard import (
    MAX_PRINTED_LINES,
    OutputTail,
    TimeLimitExceeded,
    call_guarded,
    explain_error,
    failure_sentence,
    run_with_time_limit,
)
from rlvr.config import STRICT_ENV


@pytest.fixture(autouse=True)
def normal_mode(monkeypatch):
    """Outside strict mode, so a wrong answer returns a Result instead of raising."""
    monkeypatch.delenv(STRICT_ENV, raising=False)


def sleeps(*args, **kwargs):
    """A learner's function that never comes back in time."""
    time.sleep(30)


def loops(*args, **kwargs):
    """A pure-Python endless loop."""
    while True:
        pass


def swallows_exceptions(*args, **kwargs):
    """Catches Exception in its loop: the time limit must still stop it."""
    while True:
        try:
            time.sleep(0.05)
        except Exception:  # noqa: BLE001 - the learner's code
            pass


def prints_a_lot(*args, **kwargs):
    """Prints 50,000 lines, then returns 7."""
    for i in range(50_000):
        print("line", i)
    print("to stderr", file=sys.stderr)
    return 7


def exits(*args, **kwargs):
    """Calls exit() as a script would."""
    sys.exit(3)


def raises_keyboard_interrupt(*args, **kwargs):
    """As if the learner pressed stop during the call."""
    raise KeyboardInterrupt


@pytest.mark.parametrize("fn", [sleeps, loops, swallows_exceptions])
def test_the_time_limit_stops_a_function_in_the_main_thread(fn):
    start = time.perf_counter()
    call = call_guarded(fn, seconds=0.5)
    assert call.timed_out and time.perf_counter() - start < 5
    assert "did not finish within 0.5 s" in failure_sentence(call)


@pytest.mark.parametrize("fn", [loops, swallows_exceptions])
def test_the_time_limit_stops_a_function_in_another_thread(fn):
    """Off the main thread SIGALRM cannot be used: the watchdog thread's asynchronous exception takes over."""
    calls = []
    worker = threading.Thread(target=lambda: calls.append(call_guarded(fn, seconds=0.5)))
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive() and calls[0].timed_out


def test_the_alarm_handler_and_timer_are_put_back_after_each_call():
    before = signal.getsignal(signal.SIGALRM)
    for fn in (sleeps, exits, lambda: 1):
        call_guarded(fn, seconds=0.3)
        assert signal.getsignal(signal.SIGALRM) is before
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    time.sleep(0.5)  # no stray alarm fires afterwards


def test_someone_elses_alarm_is_left_alone():
    """With another timer running (e.g. pytest-timeout), the watchdog thread is used and the timer survives."""
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(True))
    signal.setitimer(signal.ITIMER_REAL, 2.0)
    try:
        call = call_guarded(loops, seconds=0.3)
        assert call.timed_out and signal.getitimer(signal.ITIMER_REAL)[0] > 0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def busy(seconds: float) -> None:
    """A pure-Python wait of about `seconds`."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def late_alarms() -> None:
    """Functions that return right at their limit, 50 times: nothing may be raised after the calls."""
    for _ in range(50):
        try:
            run_with_time_limit(busy, (0.0099,), seconds=0.01)
        except TimeLimitExceeded:
            pass
    busy(0.5)


def test_a_late_alarm_cannot_escape_in_the_main_thread():
    late_alarms()
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_late_alarm_cannot_escape_in_another_thread():
    errors = []

    def worker():
        try:
            late_alarms()
        except BaseException as error:  # noqa: BLE001 - the test records anything that escapes
            errors.append(error)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive() and errors == []


def test_printed_output_is_kept_to_a_few_lines(capsys):
    call = call_guarded(prints_a_lot)
    assert call.value == 7 and call.error is None
    summary = call.printed.summary()
    assert "printed 50001 lines" in summary and summary.count("\n") == MAX_PRINTED_LINES
    assert capsys.readouterr().out == ""  # nothing reached the notebook


def test_an_output_tail_counts_a_last_line_without_newline():
    tail = OutputTail()
    tail.write("a\nb")
    assert "printed 2 lines:" in tail.summary() and "    b" in tail.summary()


def test_system_exit_is_caught_and_explained():
    call = call_guarded(exits)
    assert isinstance(call.error, SystemExit)
    assert "exit()" in failure_sentence(call)


def test_a_real_keyboard_interrupt_still_stops_the_cell():
    with pytest.raises(KeyboardInterrupt):
        call_guarded(raises_keyboard_interrupt)


def test_torch_grad_mode_and_default_dtype_are_restored():
    def breaks_globals():
        torch.set_grad_enabled(False)
        torch.set_default_dtype(torch.float64)

    call_guarded(breaks_globals)
    assert torch.is_grad_enabled() and torch.get_default_dtype() == torch.float32


@pytest.mark.parametrize(
    "error, words",
    [
        (TypeError("f() got an unexpected keyword argument 'eps'"), "signature"),
        (RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn"), "graph"),
        (RuntimeError("a leaf Variable that requires grad is being used in an in-place operation."), "in place"),
        (RuntimeError("The size of tensor a (16) must match the size of tensor b (48) at dimension 1"), "axis"),
        (NameError("name 'np' is not defined"), "not defined"),
        (ValueError("something else"), ""),
    ],
)
def test_common_errors_are_explained_in_words(error, words):
    assert words in explain_error(error) and (words or explain_error(error) == "")


# ------------------------------------------------------------------------------------------------ through a check
def make_exercise():
    """A one-case exercise: double the input."""
    return Exercise("double", [Case("x = [1, 2]", args=(torch.tensor([1.0, 2.0]),))], reference=lambda x: 2 * x)


def test_a_sleeping_function_is_stopped_and_reported(monkeypatch):
    exercise = make_exercise()
    exercise.time_limit = 0.5
    start = time.perf_counter()
    result = exercise.check(sleeps)
    assert result.outcome is Outcome.UNCHECKABLE and "did not finish within 0.5 s" in result.message
    assert time.perf_counter() - start < 5


def test_a_printing_function_is_checked_and_its_output_summarised(capsys):
    def doubles_loudly(x):
        prints_a_lot()
        return 2 * x

    result = make_exercise().check(doubles_loudly)
    assert result.passed and "printed 50001 lines (the first 3 shown)" in result.message
    assert capsys.readouterr().out == ""


def test_an_exiting_function_is_reported_in_one_sentence():
    result = make_exercise().check(exits)
    assert result.outcome is Outcome.UNCHECKABLE and "SystemExit" in result.message and "exit()" in result.message


def test_the_kernel_is_usable_after_a_stopped_check():
    exercise = make_exercise()
    exercise.time_limit = 0.3
    assert exercise.check(loops).outcome is Outcome.UNCHECKABLE
    assert exercise.check(lambda x: x + x).passed
    time.sleep(0.5)
    assert torch.ones(2).sum().item() == 2.0


# ------------------------------------------------------------------------------------------------ inside Jupyter
KERNEL_CELLS = [
    """import threading, time
import torch
from rlvr.checks import Case, Exercise
exercise = Exercise("double", [Case("x = [1, 2]", args=(torch.tensor([1.0, 2.0]),))], reference=lambda x: 2 * x)
exercise.time_limit = 1.0
print("main thread:", threading.current_thread() is threading.main_thread())""",
    """def sleeps(x):
    time.sleep(60)
start = time.perf_counter()
print(exercise.check(sleeps))
print(f"took {time.perf_counter() - start:.0f} s")""",
    """def loud(x):
    for i in range(100_000):
        print(i)
    exit()
print(exercise.check(loud))""",
    """time.sleep(1.5)  # a stray alarm would interrupt this cell
print(exercise.check(lambda x: x + x))""",
]


@pytest.mark.notebooks
def test_in_a_jupyter_kernel_a_sleeping_function_stops_and_the_kernel_stays_usable(tmp_path):
    """Cells run in the kernel's main thread, where the SIGALRM limit applies; nothing leaks into later cells."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from coursetools import execute

    path = tmp_path / "limits.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell(c) for c in KERNEL_CELLS]), str(path))
    nb = execute.execute_notebook(path, fast=True, strict=False, timeout=120)
    texts = ["".join(out.get("text", "") for out in cell.outputs) for cell in nb.cells]
    assert "main thread: True" in texts[0]
    assert "did not finish within 1 s" in texts[1] and "took 1 s" in texts[1]
    assert "printed 100000 lines (the first 3 shown)" in texts[2] and "exit()" in texts[2]
    assert len(texts[2]) < 2000
    assert "[Correct]" in texts[3]


# ----------------------------------------------------------------------------- a call that does not fit


def _mean_baseline_exercise():
    """A small exercise whose learner calls a package function."""
    return Exercise(
        "baseline",
        [Case("rewards [1, 0, 0, 0], group_size=4", args=(torch.tensor([1.0, 0, 0, 0]), 4))],
        reference=lambda rewards, group_size: rewards - rewards.mean(),
    )


def test_a_wrong_keyword_to_a_package_function_names_that_function_and_its_parameters():
    from rlvr.objectives import masked_mean

    def calls_with_a_wrong_keyword(rewards, group_size):
        return rewards - masked_mean(rewards, masks=torch.ones(4, dtype=torch.bool))

    message = _mean_baseline_exercise().check(calls_with_a_wrong_keyword).message
    assert "`masked_mean()` got an unexpected keyword 'masks'; its parameters are tensor, mask, dim" in message
    assert "template" not in message and "\n" not in message


def test_too_many_arguments_to_a_package_function_is_not_blamed_on_the_template():
    from rlvr.objectives import masked_mean

    def calls_with_three(rewards, group_size):
        return rewards - masked_mean(rewards, torch.ones(4, dtype=torch.bool), 0, 1)

    message = _mean_baseline_exercise().check(calls_with_three).message
    assert "your code calls `masked_mean()` with arguments it does not take" in message
    assert "template" not in message


@pytest.mark.parametrize("kind", ["positional", "gradient case"])
def test_a_function_whose_own_parameters_differ_is_told_to_keep_the_template(kind):
    from rlvr.checks import GradCase

    def renamed(rewards, G):
        return rewards - rewards.mean()

    if kind == "positional":
        exercise = _mean_baseline_exercise()
        exercise.cases = [Case("rewards", args=(torch.tensor([1.0, 0.0]),), kwargs={"group_size": 2})]
    else:
        case = GradCase("rewards", kwargs={"rewards": torch.tensor([1.0, 0.0], dtype=torch.float64), "group_size": 2})
        exercise = Exercise("baseline", [case], reference=lambda rewards, group_size: rewards - rewards.mean())
    message = exercise.check(renamed).message
    assert "parameters differ from the template's" in message and "got an unexpected keyword argument" in message
