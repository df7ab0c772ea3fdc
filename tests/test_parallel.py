"""rlvr.parallel: runs trained side by side in worker processes give the numbers they give alone, bit for bit; an
interrupt stops every worker and leaves no process, no temporary file and no broken cache entry; a failing run is
named in one line and the others finish; cached runs load in this process without starting a worker."""

import functools
import multiprocessing
import os
import pickle
import signal
import threading
import time

import pytest
import torch

from rlvr import cache, parallel
from rlvr.config import torch_threads
from rlvr.train import train_rl

from parallel_jobs import (
    clock,
    dies_at_once,
    fails_after_training,
    niceness,
    stubborn,
    surroundings,
    tiny_config,
    tiny_run,
)

pytestmark = pytest.mark.slow  # each test starts worker processes (a few seconds each to import torch)


@pytest.fixture(autouse=True)
def own_cache(monkeypatch, tmp_path):
    """A fresh checkpoint cache for each test (the workers inherit the variable)."""
    monkeypatch.setenv("RLVR_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture(autouse=True)
def no_run_left_ahead(monkeypatch):
    """Runs started ahead at this process's priority (at the lowest, a busy machine, e.g. the other pytest worker,
    could starve them for minutes), and none left behind by a test."""
    monkeypatch.setattr(parallel, "AHEAD_NICE", 0)
    monkeypatch.setattr(parallel, "AHEAD_NICE_FIRST", 0)
    yield
    parallel.stop_ahead()
    parallel._AHEAD.clear()
    assert parallel._AHEAD_POOL["thread"] is None and parallel._AHEAD_QUEUE == []


def same_numbers(a, b) -> bool:
    """Two runs with the same history (timings aside) and the same weights, bit for bit."""
    if len(a.history) != len(b.history):
        return False
    keys = [key for key in a.history[0] if not key.endswith("_s")]
    pairs = [(x[key], y[key]) for x, y in zip(a.history, b.history) for key in keys]
    same_history = all(u == v or (u != u and v != v) for u, v in pairs)  # NaN where both have NaN
    return same_history and all(torch.equal(p, q) for p, q in zip(a.policy.parameters(), b.policy.parameters()))


def test_a_run_trained_beside_another_gives_the_numbers_it_gives_alone():
    with torch_threads(2):  # whatever this process uses, training uses rlvr.config.TRAIN_THREADS
        alone = train_rl(tiny_config(seed=3), progress=False)
    steps = []
    runs = parallel.train_all(
        {"this one": functools.partial(tiny_run, 3), "beside it": functools.partial(tiny_run, 4)},
        on_step=lambda label: lambda step, total, history: steps.append((label, step, len(history))),
        workers=2,
    )
    assert not runs["this one"].from_cache and same_numbers(runs["this one"], alone)
    assert not same_numbers(runs["beside it"], alone)  # another seed: the comparison can fail
    assert [(step, n) for label, step, n in steps if label == "this one"] == [(1, 1), (2, 2), (3, 3)]  # streamed
    assert multiprocessing.active_children() == []
    again = parallel.train_all({"this one": functools.partial(tiny_run, 3)}, on_start=lambda label: pytest.fail(label))
    assert again["this one"].from_cache and same_numbers(again["this one"], alone)  # loaded here, no worker


def test_an_interrupt_stops_every_worker_and_leaves_no_temporary_file_or_broken_entry(own_cache, monkeypatch):
    monkeypatch.setattr(parallel, "STOP_SECONDS", 2.0)  # the stubborn worker ignores SIGTERM: SIGKILL after 2 s
    started = []

    def interrupt(label):
        def on_step(step, total, history):
            started.append(label)
            if set(started) == {"long", "stubborn"}:
                os.kill(os.getpid(), signal.SIGINT)  # what Jupyter's interrupt button sends the kernel

        return on_step

    jobs = {"long": functools.partial(tiny_run, 0, 500), "stubborn": stubborn}
    with pytest.raises(KeyboardInterrupt):
        parallel.train_all(jobs, on_step=interrupt, workers=2)
    assert multiprocessing.active_children() == []
    assert sorted(own_cache.glob("*" + cache.TMP_SUFFIX)) == []  # the killed worker's half-written file is removed
    assert sorted(own_cache.iterdir()) == []  # the interrupted run wrote no entry, whole or broken


def test_a_failing_run_is_named_in_one_line_and_the_others_finish(capsys):
    runs = parallel.train_all({"good": functools.partial(tiny_run, 1), "broken": fails_after_training}, workers=2)
    assert list(runs) == ["good"] and len(runs["good"].history) == 3
    lines = [line for line in capsys.readouterr().out.splitlines() if "broken" in line]
    assert lines == ["broken: failed: ValueError: the run's own bug"]
    assert multiprocessing.active_children() == []


def test_runs_no_worker_could_take_train_here(monkeypatch, capsys):
    monkeypatch.setattr(parallel, "_worker", dies_at_once)
    runs = parallel.train_all({"a": functools.partial(tiny_run, 5), "b": functools.partial(tiny_run, 6)}, workers=2)
    assert list(runs) == ["a", "b"] and not runs["a"].from_cache and len(runs["b"].history) == 3
    assert "rlvr: the worker processes stopped before training a, b; training here" in capsys.readouterr().out
    assert multiprocessing.active_children() == []


def test_a_single_run_to_train_trains_here_without_a_worker(monkeypatch):
    monkeypatch.setattr(parallel, "_train_in_workers", lambda *args: pytest.fail("started workers for one run"))
    started = []
    runs = parallel.train_all({"only": functools.partial(tiny_run, 7)}, on_start=started.append)
    assert started == ["only"] and len(runs["only"].history) == 3


def _wait_until_training(label: str, seconds: float = 60.0) -> None:
    """Wait until the run started ahead as `label` has reported a step."""
    deadline = time.monotonic() + seconds
    while not any(entry.label == label and entry.step for entry in parallel._AHEAD.values()):
        assert time.monotonic() < deadline, f"{label} never started"
        time.sleep(0.05)


def _wait_until_taken(jobs: dict, seconds: float = 60.0) -> None:
    """Wait until a worker has taken every run started ahead of `jobs` (a cell then waits for them, not trains them)."""
    deadline = time.monotonic() + seconds
    while parallel.started_ahead(jobs) != set(jobs):
        assert time.monotonic() < deadline, f"{sorted(jobs)} never taken"
        time.sleep(0.05)


def test_a_run_started_ahead_is_waited_for_not_trained_again_and_gives_the_numbers_it_gives_alone(monkeypatch):
    with torch_threads(2):
        alone = train_rl(tiny_config(seed=8, steps=6), progress=False)
    assert parallel.start_ahead({"in the setup cell": functools.partial(tiny_run, 8, 6)}) == ["in the setup cell"]
    assert parallel.start_ahead({"run twice": functools.partial(tiny_run, 8, 6)}) == []  # already started
    _wait_until_training("in the setup cell")
    monkeypatch.setattr(parallel, "_train_in_workers", lambda *args: pytest.fail("trained it again"))
    monkeypatch.setattr(parallel, "_train_here", lambda *args: pytest.fail("trained it again"))
    steps, started = [], []
    runs = parallel.train_all(
        {"in the cell that reads it": functools.partial(tiny_run, 8, 6)},
        on_step=lambda label: lambda step, total, history: steps.append((step, total, len(history or []))),
        on_start=started.append,
    )
    assert same_numbers(runs["in the cell that reads it"], alone)
    assert started == ["in the cell that reads it"] and steps[-1] == (6, 6, 6)  # its progress shown while waiting
    for thread in threading.enumerate():  # the watching thread lets its worker go once the run is back
        if thread.name == "rlvr-ahead":
            thread.join(30)
    assert multiprocessing.active_children() == []


def test_runs_started_ahead_run_at_a_lower_priority_the_first_above_the_others(monkeypatch):
    monkeypatch.setattr(parallel, "AHEAD_NICE", 5)  # notebooks use 19, the lowest (see the fixture) ...
    monkeypatch.setattr(parallel, "AHEAD_NICE_FIRST", 2)  # ... and 10 for the first run a notebook starts
    jobs = {"first": functools.partial(niceness, "a"), "second": functools.partial(niceness, "b")}
    assert parallel.start_ahead(jobs, workers=1) == ["first", "second"]  # one worker: it lowers itself for the second
    _wait_until_taken(jobs)  # the first is quick: the worker takes the second soon after
    runs = parallel.train_all(jobs)
    base = os.nice(0)
    assert runs == {"first": min(base + 2, 19), "second": min(base + 5, 19)} and base < 19
    tiny_run(9, 2)  # now in the cache
    assert parallel.start_ahead({"cached": functools.partial(tiny_run, 9, 2)}) == []


def test_a_run_the_cache_held_when_started_ahead_is_loaded_once_and_never_starts():
    tiny_run(9, 2)  # in the cache
    job = functools.partial(tiny_run, 9, 2)
    assert parallel.start_ahead({"cached": job}) == []  # nothing to train
    loaded = parallel._AHEAD[pickle.dumps(job)].run
    started = []
    runs = parallel.train_all({"read later": job}, on_start=started.append)
    assert runs["read later"] is loaded and loaded.from_cache and started == []  # taken, not loaded again
    assert multiprocessing.active_children() == []


def test_stopping_runs_started_ahead_leaves_no_process_no_temporary_file_and_no_entry(own_cache):
    parallel.start_ahead({"long": functools.partial(tiny_run, 0, 500), "longer": functools.partial(tiny_run, 1, 500)})
    _wait_until_training("long")
    _wait_until_training("longer")
    parallel.stop_ahead()
    assert multiprocessing.active_children() == []
    assert sorted(own_cache.iterdir()) == []  # no half-written checkpoint, no entry
    assert [entry.label for entry in parallel._AHEAD.values()] == []  # forgotten: a later cell trains them itself
    runs = parallel.train_all({"short": functools.partial(tiny_run, 0, 2)})
    assert len(runs["short"].history) == 2


def test_interrupting_the_wait_for_a_run_started_ahead_stops_it(own_cache):
    parallel.start_ahead({"long": functools.partial(tiny_run, 0, 500)})

    def interrupt(label):
        def on_step(step, total, history):
            if step >= 2:
                os.kill(os.getpid(), signal.SIGINT)

        return on_step

    with pytest.raises(KeyboardInterrupt):
        parallel.train_all({"long": functools.partial(tiny_run, 0, 500)}, on_step=interrupt)
    assert multiprocessing.active_children() == []
    assert sorted(own_cache.iterdir()) == []


def test_a_cell_trains_its_own_runs_first_then_waits_for_the_runs_started_ahead(monkeypatch):
    parallel.start_ahead({"ahead": functools.partial(tiny_run, 10, 4)})
    _wait_until_taken({"ahead": functools.partial(tiny_run, 10, 4)})
    order = []
    runs = parallel.train_all(
        {"ahead": functools.partial(tiny_run, 10, 4), "its own": functools.partial(tiny_run, 11, 2)},
        on_start=order.append,
    )
    assert order == ["its own", "ahead"] and list(runs) == ["ahead", "its own"]  # the jobs' order, as always
    assert len(runs["ahead"].history) == 4 and len(runs["its own"].history) == 2


def test_a_run_that_failed_ahead_is_trained_by_the_cell_and_named_in_one_line(capsys):
    assert parallel.start_ahead({"broken": fails_after_training}) == ["broken"]
    _wait_until_taken({"broken": fails_after_training})
    runs = parallel.train_all({"broken": fails_after_training, "good": functools.partial(tiny_run, 12, 2)})
    assert list(runs) == ["good"]
    lines = [line for line in capsys.readouterr().out.splitlines() if "broken" in line]
    assert lines == ["broken: failed: ValueError: the run's own bug"]  # once: from the cell, not from the background


def watching_threads() -> int:
    """How many threads watch runs started ahead."""
    return sum(thread.name == "rlvr-ahead" for thread in threading.enumerate())


def test_runs_started_by_two_calls_share_one_queue_first_started_first():
    first, second = functools.partial(clock, 2.0, "a"), functools.partial(clock, 0.1, "b")
    assert parallel.start_ahead({"first": first}, workers=1) == ["first"]
    _wait_until_taken({"first": first})
    thread = parallel._AHEAD_POOL["thread"]
    assert thread is not None  # taking the first run did not close the queue
    assert parallel.start_ahead({"second": second}) == ["second"]
    assert watching_threads() == 1 and parallel._AHEAD_POOL["thread"] is thread  # one queue, one thread, one worker
    entries = [parallel._AHEAD[pickle.dumps(job)] for job in (first, second)]
    assert all(entry.finished.wait(60) for entry in entries)
    assert entries[0].run[1] <= entries[1].run[0]  # the second started once the first had finished
    runs = parallel.train_all({"second": second, "first": first})
    assert runs == {"second": entries[1].run, "first": entries[0].run}
    deadline = time.monotonic() + 10
    while watching_threads() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert watching_threads() == 0 and parallel._AHEAD_POOL["thread"] is None  # the queue is empty: its thread is gone
    third = functools.partial(clock, 0.1, "c")
    assert parallel.start_ahead({"third": third}) == ["third"]  # ... and a new one starts
    _wait_until_taken({"third": third})
    assert list(parallel.train_all({"third": third})) == ["third"]


def test_a_run_started_ahead_later_takes_a_core_the_earlier_ones_leave_idle():
    assert parallel.start_ahead({"long": functools.partial(clock, 4.0, "a")}, workers=2) == ["long"]
    time.sleep(1.0)  # the long run is training on one worker
    assert parallel.start_ahead({"short": functools.partial(clock, 0.1, "b")}) == ["short"]
    _wait_until_taken({"short": functools.partial(clock, 0.1, "b")})
    runs = parallel.train_all({"short": functools.partial(clock, 0.1, "b"), "long": functools.partial(clock, 4.0, "a")})
    assert runs["short"][1] < runs["long"][1]  # a second worker took it beside the long run
    assert multiprocessing.active_children() == [] or watching_threads() <= 1


def test_a_run_still_queued_ahead_is_trained_by_the_cell_that_needs_it_not_waited_for():
    first, queued = functools.partial(clock, 3.0, "a"), functools.partial(clock, 0.1, "b")
    assert parallel.start_ahead({"first": first, "queued": queued}, workers=1) == ["first", "queued"]
    time.sleep(1.0)  # the one worker has taken the first run; the second waits in the queue
    assert parallel.started_ahead({"queued": queued, "first": first}) == {"first"}
    started = []
    runs = parallel.train_all({"queued": queued}, on_start=started.append)
    first_run = parallel.train_all({"first": first})["first"]
    assert started == ["queued"] and runs["queued"][1] < first_run[1]  # trained by the cell while the first trained


def test_a_worker_computes_and_writes_as_this_process_does_now(monkeypatch, own_cache):
    """Workers fork from a server process started at the first one (`parallel.worker_context`): a worker must still
    see this process's environment as it is when the worker starts, not as it was when the server started."""
    first = parallel.train_all({"a": functools.partial(surroundings, "a"), "b": functools.partial(surroundings, "b")})
    monkeypatch.setenv("RLVR_TEST_MARKER", "set after the first workers")
    later_cache = own_cache / "later"
    later_cache.mkdir()
    monkeypatch.setenv("RLVR_CACHE_DIR", str(later_cache))
    later = parallel.train_all({"c": functools.partial(surroundings, "c"), "d": functools.partial(surroundings, "d")})
    from rlvr.cache import numerics

    for seen in (*first.values(), *later.values()):
        assert seen["numerics"] == numerics()
    assert {seen["marker"] for seen in first.values()} == {None}
    assert {seen["marker"] for seen in later.values()} == {"set after the first workers"}
    assert {seen["cache"] for seen in later.values()} == {str(later_cache)}
    if parallel.worker_context().get_start_method() == "forkserver":  # its workers start with torch imported
        assert all(seen["dynamo_imported"] for seen in later.values())


def test_workers_fork_from_a_server_on_linux_only(monkeypatch):
    """forkserver where forking a process that has loaded torch is safe (Linux); spawn elsewhere (macOS, Windows)."""
    import sys

    monkeypatch.setattr(sys, "platform", "darwin")
    assert parallel.worker_context().get_start_method() == "spawn"
    monkeypatch.setattr(sys, "platform", "linux")
    assert parallel.worker_context().get_start_method() == "forkserver"
