"""Independent runs side by side, one worker process per core: what a cell that trains several runs calls.

`train_all(jobs)` first reads every run the checkpoint cache holds, in this process (`rlvr.config.loading_only`: a
job that would train stops before its first step); the others train in worker processes, as many as the machine has
cores, each a fresh interpreter with nothing of the kernel's state (`worker_context`: on Linux forked from a server
process that has imported torch once, elsewhere spawned). A single run
to train (or a single core) trains here: a worker would add its start-up and nothing else, since the cell waits for
it either way. If every worker stops before taking a run (a script without `if __name__ == "__main__":`, whose top
level a spawned process runs again), the runs train here, one line saying so. A run trains
with the same thread count wherever it runs (`rlvr.config.training_threads`), so its numbers do not depend on which
cell trained it or on how many ran beside it; the cache keys say so (`rlvr.cache.numerics`).

What the kernel sees while workers train: each worker streams its runs' history rows back through a queue and this
process calls the run's on_step(step, total, history) as if it trained here (progress lines, live plots).

Stopping: interrupting the call (KeyboardInterrupt) stops every worker (SIGTERM, then SIGKILL for one that does not
stop), waits for them and removes any checkpoint a worker was writing (`rlvr.cache.temporary_files`); the cache
writes atomically, so no entry is ever half written. Workers ignore SIGINT: only this process decides. A run that
fails is reported in one line naming it (`on_fail`), and the others finish.

Runs started ahead (`start_ahead`, a notebook's setup cell): the same workers, at the lowest priority (the kernel and
a cell's own runs go first; sliders stay responsive), watched by a thread of this process that never prints. A later
`train_all` of the same job waits for it, showing its progress, instead of training it again; interrupting that
wait stops every run started ahead (`stop_ahead`), as an interrupt stops a cell's own workers.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pickle
import queue
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from . import config
from .cache import temporary_files

Job = Callable[..., Any]  # job(on_step=...) -> RunResult, picklable (a module-level function or functools.partial)
POLL_SECONDS = 0.1  # how often the kernel looks at the queue and at the workers
STOP_SECONDS = 5.0  # how long a stopped worker gets before it is killed
AHEAD_NICE = 19  # how much lower than the kernel's the priority of runs started ahead is (19: the lowest) ...
AHEAD_NICE_FIRST = 15  # ... except the first one a notebook starts (its longest): above the others, below the kernel


PRELOAD = ("torch", "torch._dynamo")  # what a worker's server imports once: ~3.5 s of processor time each worker saves


def worker_context():
    """How worker processes start: on Linux `forkserver` (a fresh server process, started from this one's environment
    at the first worker, imports torch and the part of it a first optimiser imports, once; each worker is forked from
    it, ~3.5 s of processor time sooner than a spawned interpreter that imports them again; Python 3.14 makes it
    Linux's default), elsewhere `spawn` (macOS's system libraries are not safe to fork once loaded). Either way a
    worker runs this process's main module anew, as `spawn` does, and sets this process's environment as it is when
    the worker starts (`_worker`)."""
    import multiprocessing
    import sys

    if not sys.platform.startswith("linux"):
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOAD))  # not "__main__": a script's top level runs in its workers only
    return context


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def one_line(error: BaseException) -> str:
    """'ValueError: the first line of its message'."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def train_all(
    jobs: dict[str, Job],
    on_step: Callable[[str], Callable | None] | None = None,
    on_start: Callable[[str], None] | None = None,
    on_done: Callable[[str, Any, float], None] | None = None,
    on_fail: Callable[[str, str], None] | None = None,
    workers: int | None = None,
) -> dict[str, Any]:
    """Every job's run: from the cache in this process, else trained in a worker process, side by side.

    Args:
        jobs: label -> job, called as job(on_step=...) and returning the run (picklable: a module-level function or
            functools.partial of one; a job that cannot be pickled trains here, after the others).
        on_step: label -> that run's on_step(step, total, history), or None.
        on_start: called with a label when its run starts training (in a worker or here).
        on_done: called with (label, run, seconds) when a run is obtained (seconds: since it started).
        on_fail: called with (label, one line naming the error) when a run fails; the others go on.
        workers: at most this many worker processes (default: one per core).
    Returns:
        label -> run, in the order of `jobs`, without the runs that failed.
    """
    on_step = on_step or (lambda label: None)
    _reclaim(jobs)  # queued ahead but not taken by a worker: trained here, now
    ahead = _started_ahead(jobs)  # trained ahead: waited for after this cell's own runs, which they yield to
    done = _obtain(
        {label: job for label, job in jobs.items() if label not in ahead}, on_step, on_start, on_done, on_fail, workers
    )
    done.update(_wait_for_ahead(ahead, on_step, on_start, on_done))
    failed_ahead = {label: jobs[label] for label in ahead if label not in done}  # trained here: its error in one line
    done.update(_obtain(failed_ahead, on_step, on_start, on_done, on_fail, workers))
    return {label: done[label] for label in jobs if label in done}


def _obtain(jobs: dict[str, Job], on_step, on_start, on_done, on_fail, workers) -> dict[str, Any]:
    """`train_all` without runs started ahead: load what the cache holds, train the rest side by side."""
    done: dict[str, Any] = {}
    to_train, here = [], []
    for label, job in jobs.items():
        start = time.perf_counter()
        try:
            with config.loading_only():
                done[label] = job(on_step=on_step(label))
        except config.TrainingRefused:
            (to_train if picklable(job) else here).append(label)
            continue
        except Exception as error:  # a job broken before training: the others go on
            _report(on_fail, label, one_line(error))
            continue
        if on_done is not None:
            on_done(label, done[label], time.perf_counter() - start)
    n_workers = min(len(to_train), workers or cores())
    if n_workers < 2:  # one run (or one core): a worker would only add its start-up, the numbers are the same here
        here, to_train = to_train + here, []
    if to_train:
        results, untaken = _train_in_workers(
            {label: jobs[label] for label in to_train}, on_step, on_start, on_done, on_fail, n_workers
        )
        done.update(results)
        if untaken:
            print(f"rlvr: the worker processes stopped before training {', '.join(untaken)}; training here", flush=True)
            here = untaken + here
    for label in here:
        _train_here(label, jobs[label], on_step, on_start, on_done, on_fail, done)
    return done


def picklable(job: Job) -> bool:
    """Whether a job can be sent to a worker process."""
    try:
        pickle.dumps(job)
    except Exception:
        return False
    return True


def _report(on_fail, label: str, message: str) -> None:
    """Say in one line that a run failed (on_fail, else print)."""
    if on_fail is not None:
        on_fail(label, message)
    else:
        print(f"{label}: failed: {message}", flush=True)


def _train_here(label, job, on_step, on_start, on_done, on_fail, done: dict) -> None:
    """Train one job in this process (one that cannot be sent to a worker)."""
    if on_start is not None:
        on_start(label)
    start = time.perf_counter()
    try:
        done[label] = job(on_step=on_step(label))
    except Exception as error:
        _report(on_fail, label, one_line(error))
        return
    if on_done is not None:
        on_done(label, done[label], time.perf_counter() - start)


# ----------------------------------------------------------------------------------------- runs started ahead
@dataclass
class _Ahead:
    """One run started ahead: what the watching thread has heard of it."""

    label: str
    finished: threading.Event = field(default_factory=threading.Event)
    step: int = 0
    total: int = 0
    history: list | None = None
    run: Any = None  # the run, once done
    error: str | None = None  # one line, once failed


_AHEAD: dict[bytes, _Ahead] = {}  # pickled job -> its run started ahead (this process's, until it is collected)
_AHEAD_STOP = threading.Event()  # set: every run started ahead stops
_AHEAD_LOCK = threading.Lock()
_AHEAD_QUEUE: list[tuple[bytes, Job, _Ahead]] = []  # started ahead, not yet given to a worker (first in, first out)
_AHEAD_POOL: dict[str, threading.Thread | None] = {"thread": None}  # the watching thread taking from the queue


def start_ahead(jobs: dict[str, Job], workers: int | None = None) -> list[str]:
    """Start training, below the kernel's priority, every job whose run the cache does not hold (worker processes, one
    per core, watched by a thread of this process; nothing is printed; the first run the queue takes trains at
    AHEAD_NICE_FIRST, the others at AHEAD_NICE, the lowest). Returns the labels started. Runs started by several calls
    share one queue and its workers, first started first. A later `train_all` of the same job (the same pickled job,
    whatever its label) waits for it instead of training it again, and takes a run the cache held from here (loading
    it, with whatever the job computes on it, happens once)."""
    to_train = {}
    for label, job in jobs.items():
        key = pickle.dumps(job)
        if key in _AHEAD and not _AHEAD[key].error:
            continue  # started before (this cell ran twice)
        try:
            with config.loading_only():
                loaded = job(on_step=None)
        except config.TrainingRefused:
            to_train[label] = (key, job)
            continue
        except Exception:
            continue  # broken before training: the cell that needs it says how, in one line
        entry = _Ahead(label, run=loaded)
        entry.finished.set()
        with _AHEAD_LOCK:
            _AHEAD[key] = entry
    if not to_train:
        return []
    with _AHEAD_LOCK:
        for label, (key, job) in to_train.items():
            entry = _Ahead(label)
            _AHEAD[key] = entry
            _AHEAD_QUEUE.append((key, job, entry))
        if _AHEAD_POOL["thread"] is None:  # no watching thread takes from the queue: start one
            _AHEAD_STOP.clear()
            thread = threading.Thread(target=_watch_ahead, args=(workers or cores(),), daemon=True, name="rlvr-ahead")
            _AHEAD_POOL["thread"] = thread
            thread.start()
    return list(to_train)


def _take_ahead(last: bool, room: int) -> list[tuple[bytes, Job, _Ahead]]:
    """Up to `room` runs from the front of the queue of runs started ahead (a worker is free for each); when the queue
    is empty and `last` (every run taken has finished), the watching thread closes (the next `start_ahead` starts
    another)."""
    with _AHEAD_LOCK:
        taken = _AHEAD_QUEUE[: max(0, room)]
        del _AHEAD_QUEUE[: len(taken)]
        if not taken and not _AHEAD_QUEUE and last:  # nothing left to train, nothing just taken: close
            _AHEAD_POOL["thread"] = None
        return taken


def _reclaim(jobs: dict[str, Job]) -> None:
    """Take back from the queue of runs started ahead the runs of `jobs` that no worker has taken yet: the cell that
    needs one now trains it itself, at its own priority, rather than wait behind the runs queued before it."""
    keys = set()
    for job in jobs.values():
        with contextlib.suppress(Exception):
            keys.add(pickle.dumps(job))
    with _AHEAD_LOCK:
        for item in [item for item in _AHEAD_QUEUE if item[0] in keys]:
            _AHEAD_QUEUE.remove(item)
            _AHEAD.pop(item[0], None)


def _watch_ahead(max_workers: int) -> None:
    """The watching thread: train what the queue of runs started ahead holds, and what is added to it while it
    trains, in low-priority workers, and record what happens to each run."""
    entries: dict[str, _Ahead] = {}  # worker label -> its entry
    numbers = itertools.count()
    first = []  # the label of the first run taken: the longest of the first call, the one the notebook waits on longest

    def more(last: bool, room: int) -> dict[str, Job]:
        added = {}
        for _key, job, entry in _take_ahead(last, room):
            label = f"{next(numbers)} {entry.label}"  # labels may repeat across calls (and a failed job may return)
            entries[label] = entry
            added[label] = job
            if not first:
                first.append(label)
        return added

    def nice_of(label: str) -> int:
        return AHEAD_NICE_FIRST if first == [label] else AHEAD_NICE

    def on_step(label):
        def record(step, total, history=None):
            entries[label].step, entries[label].total = step, total
            if history is not None:
                entries[label].history = history

        return record

    def on_done(label, run, seconds):
        entries[label].run = run
        entries[label].finished.set()

    def on_fail(label, message):
        entries[label].error = message
        entries[label].finished.set()

    try:
        spawn_nice = min(AHEAD_NICE, AHEAD_NICE_FIRST)
        _train_in_workers({}, on_step, None, on_done, on_fail, max_workers, spawn_nice, _AHEAD_STOP, more, nice_of)
    except Exception as error:  # the thread must not die silently with runs marked as running
        for entry in entries.values():
            entry.error = entry.error or one_line(error)
    finally:
        never_taken = []
        with _AHEAD_LOCK:
            if _AHEAD_POOL["thread"] is threading.current_thread():  # stopped (or failed) before the queue emptied
                _AHEAD_POOL["thread"] = None
                never_taken = [entry for _key, _job, entry in _AHEAD_QUEUE]
                _AHEAD_QUEUE.clear()
        for entry in [*entries.values(), *never_taken]:
            if not entry.finished.is_set():
                entry.error = entry.error or "stopped before it finished"
                entry.finished.set()


def stop_ahead(timeout: float = 2 * STOP_SECONDS + 5) -> None:
    """Stop every run started ahead and wait until their workers are gone (no process, no temporary file left)."""
    _AHEAD_STOP.set()
    for thread in threading.enumerate():
        if thread.name == "rlvr-ahead":
            thread.join(timeout)
    with _AHEAD_LOCK:
        for key in [key for key, entry in _AHEAD.items() if entry.error]:
            del _AHEAD[key]


def _started_ahead(jobs: dict[str, Job]) -> dict[str, _Ahead]:
    """label -> its run started ahead, for the jobs `start_ahead` started and that have not failed."""
    found = {}
    for label, job in jobs.items():
        try:
            entry = _AHEAD.get(pickle.dumps(job))
        except Exception:  # a job that cannot be pickled was never started ahead
            continue
        if entry is not None and not entry.error:
            found[label] = entry
    return found


def started_ahead(jobs: dict[str, Job]) -> set[str]:
    """The labels of `jobs` whose runs `start_ahead` started, that a worker has taken (or the cache held) and that have
    not failed: a cell only waits for these (`train_all` takes back the others, still queued, and trains them)."""
    queued = _queued_entries()
    return {label for label, entry in _started_ahead(jobs).items() if id(entry) not in queued}


def _queued_entries() -> set[int]:
    """The ids of the runs started ahead that are still in the queue (no worker has taken them)."""
    with _AHEAD_LOCK:
        return {id(entry) for _key, _job, entry in _AHEAD_QUEUE}


def _wait_for_ahead(waiting: dict[str, _Ahead], on_step, on_start, on_done) -> dict[str, Any]:
    """label -> run, for the runs started ahead that finish; waits for them, passing on their progress. A run that
    failed ahead is left out (train_all trains it, and its error shows in one line). An interrupt stops every run
    started ahead."""
    waiting = dict(waiting)
    done: dict[str, Any] = {}
    if not waiting:
        return done
    start = time.perf_counter()
    seen = {label: -1 for label in waiting}
    callbacks = {label: on_step(label) for label in waiting}
    for label, entry in waiting.items():
        if on_start is not None and not entry.finished.is_set():  # a run loaded ahead never starts training
            on_start(label)
    try:
        while waiting:
            for label, entry in list(waiting.items()):
                finished = entry.finished.is_set()
                if entry.step != seen[label] and callbacks[label] is not None and entry.total:
                    seen[label] = entry.step
                    callbacks[label](entry.step, entry.total, entry.history)
                if finished:
                    del waiting[label]
                    if entry.run is not None:
                        done[label] = entry.run
                        if on_done is not None:
                            on_done(label, entry.run, time.perf_counter() - start)  # how long this call waited
            if waiting:
                time.sleep(POLL_SECONDS)
    except KeyboardInterrupt:
        stop_ahead()
        raise
    return done


# ----------------------------------------------------------------------------------------------- the kernel's side
def _train_in_workers(
    jobs: dict[str, Job],
    on_step,
    on_start,
    on_done,
    on_fail,
    n_workers: int,
    nice: int = 0,
    stop=None,
    more=None,
    nice_of=None,
) -> tuple[dict[str, Any], list[str]]:
    """Train `jobs` on up to `n_workers` spawned processes (see `train_all`): label -> run, and the labels no worker
    took because every worker stopped first (e.g. a script whose top level a spawned process cannot run again). nice:
    how much lower the workers' priority is; stop: a threading.Event that, once set, stops them all; more(last, room)
    -> label -> job: at most `room` jobs (the free workers) added while these train, asked at every poll (`last`: every
    job known so far has finished), for runs started ahead."""
    context = worker_context()
    tasks, events = context.Queue(), context.Queue()
    processes = []
    results: dict[str, Any] = {}
    untaken: list[str] = []
    jobs = dict(jobs)

    def add(new_jobs: dict[str, Job], unfinished: int) -> None:
        """Queue jobs, and start workers while there are fewer than the unfinished jobs (and than n_workers)."""
        for label, job in new_jobs.items():
            tasks.put((label, job, nice if nice_of is None else max(nice, nice_of(label))))
        with _workers_start_quietly():
            while len(processes) < min(unfinished, n_workers):
                process = context.Process(
                    target=_worker, args=(tasks, events, config.TRAIN_THREADS, nice, dict(os.environ)), daemon=True
                )
                process.start()
                processes.append(process)

    try:
        add(jobs, len(jobs))
        if more is None:
            for _ in processes:
                tasks.put(None)  # one "no more jobs" per worker
        _gather(
            jobs, events, processes, on_step, on_start, on_done, on_fail, results, untaken, stop, more, add, n_workers
        )
        if more is not None:
            for _ in processes:
                tasks.put(None)
        for process in processes if stop is None or not stop.is_set() else ():  # stopped: `_stop` ends them now
            process.join(STOP_SECONDS)
    finally:
        _stop(processes)
        for q in (tasks, events):
            q.cancel_join_thread()
            q.close()
    return results, untaken


@contextlib.contextmanager
def _workers_start_quietly():
    """Start workers with SIGINT ignored from their first instruction (the disposition survives exec; Python keeps an
    ignored SIGINT) and with OMP_WAIT_POLICY=PASSIVE (idle OpenMP threads sleep instead of spinning; numbers are the
    same): an interrupt is this process's to handle, and it stops them."""
    before = os.environ.get("OMP_WAIT_POLICY")
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: the workers then set it themselves, a moment later
        handler = None
    try:
        yield
    finally:
        if handler is not None:
            signal.signal(signal.SIGINT, handler)
        if before is None:
            os.environ.pop("OMP_WAIT_POLICY", None)
        else:
            os.environ["OMP_WAIT_POLICY"] = before


def _gather(
    jobs,
    events,
    processes,
    on_step,
    on_start,
    on_done,
    on_fail,
    results: dict,
    untaken: list,
    stop=None,
    more=None,
    add=None,
    n_workers: int = 0,
):
    """Read the workers' events until every job has finished, failed, or is left untaken (a worker that dies fails
    its run), or until `stop` is set. more/add: jobs added meanwhile, and how to queue them (`_train_in_workers`)."""
    histories: dict[str, Any] = {}
    running: dict[int, tuple[str, float]] = {}  # worker pid -> (label, start)
    finished: set[str] = set()
    quiet = 0  # polls in a row that found the queue empty
    callbacks = {label: on_step(label) for label in jobs}
    while not (stop is not None and stop.is_set()):
        if more is not None:
            added = more(len(finished) >= len(jobs), n_workers - (len(jobs) - len(finished)))
            jobs.update(added)
            callbacks.update({label: on_step(label) for label in added})
            if added:
                add(added, len(jobs) - len(finished))
        if len(finished) >= len(jobs):
            break
        try:
            kind, label, *rest = events.get(timeout=POLL_SECONDS)
        except queue.Empty:
            quiet += 1
            if quiet >= 2:  # what a worker sent before it stopped has arrived by now
                _notice_dead_workers(jobs, processes, running, finished, on_fail, untaken)
            continue
        quiet = 0
        if kind == "start":
            running[rest[0]] = (label, time.perf_counter())
            if on_start is not None:
                on_start(label)
        elif kind == "step":
            step, total, begin, rows = rest
            history = None
            if rows is not None:
                if begin == 0:
                    histories[label] = []
                histories[label][begin:] = rows
                history = histories[label]
            if callbacks[label] is not None:
                callbacks[label](step, total, history)
        elif kind in ("done", "failed"):
            pid, payload = rest
            _label, start = running.pop(pid, (label, time.perf_counter()))
            finished.add(label)
            if kind == "failed":
                _report(on_fail, label, payload)
                continue
            results[label] = pickle.loads(payload)
            if on_done is not None:
                on_done(label, results[label], time.perf_counter() - start)


def _notice_dead_workers(jobs, processes, running, finished, on_fail, untaken: list) -> None:
    """A worker that died (killed, out of memory) fails the run it was training; when every worker is gone, the runs
    no worker took are `untaken` (this process trains them)."""
    for process in processes:
        if process.exitcode is not None and process.pid in running:
            label, _start = running.pop(process.pid)
            finished.add(label)
            _report(on_fail, label, f"its worker process stopped (exit code {process.exitcode})")
    if all(process.exitcode is not None for process in processes):
        for label in jobs:
            if label not in finished:
                finished.add(label)
                untaken.append(label)


def _stop(processes) -> None:
    """Stop every worker still alive (SIGTERM: a worker writing a checkpoint removes its temporary file; SIGKILL after
    STOP_SECONDS), wait for them, and remove any temporary file a killed worker left in the cache."""
    alive = [p for p in processes if p.is_alive()]
    for process in alive:
        process.terminate()
    deadline = time.monotonic() + STOP_SECONDS
    for process in alive:
        process.join(max(0.1, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join()
    for process in processes:
        if process.pid is not None:
            for path in temporary_files(process.pid):
                path.unlink(missing_ok=True)


# ----------------------------------------------------------------------------------------------- the worker's side
def _worker(tasks, events, threads: int, nice: int = 0, environ: dict | None = None) -> None:
    """A worker process: take jobs until told to stop, stream each run's history rows, send back the run (pickled) or
    the one line of its error. nice > 0: at that much lower a priority (where the system has one). environ: the
    kernel's environment when the worker started (a forked worker would otherwise keep its server's)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # only the kernel decides to stop
    if environ is not None:
        os.environ.clear()
        os.environ.update(environ)
    lowered = _lower_priority(0, nice)
    signal.signal(signal.SIGTERM, _exit_on_term)  # ... and then `finally` blocks run (a half-written file is removed)
    config.TRAIN_THREADS = threads  # the kernel's, even if it was changed there after import
    pid = os.getpid()
    while True:
        item = tasks.get()
        if item is None:
            return
        label, job, job_nice = item
        lowered = _lower_priority(lowered, job_nice)
        events.put(("start", label, pid))
        try:
            run = job(on_step=_Stream(events, label))
            events.put(("done", label, pid, pickle.dumps(run)))
        except Exception as error:
            events.put(("failed", label, pid, one_line(error)))


def _lower_priority(lowered: int, nice: int) -> int:
    """Lower this process's priority to `nice` below the kernel's if it is not that low already (an unprivileged
    process cannot raise it again); returns how much lower it now is."""
    if nice > lowered and hasattr(os, "nice"):
        os.nice(nice - lowered)
        return nice
    return lowered


def _exit_on_term(signum, frame) -> None:
    """SIGTERM in a worker: leave through SystemExit, so `finally` and `except BaseException` blocks run."""
    raise SystemExit(128 + signum)


class _Stream:
    """A worker's on_step: sends the rows of the history the kernel has not seen yet (all of them when the history
    is another list than before: a warm-up's losses, then the RL run's steps)."""

    def __init__(self, events, label: str):
        self.events, self.label = events, label
        self.history_id, self.sent = None, 0

    def __call__(self, step: int, total: int, history=None) -> None:
        """Send (step, total, where the new rows start, the new rows), or no rows when there is no history."""
        if history is None:
            self.events.put(("step", self.label, step, total, 0, None))
            return
        begin = self.sent if id(history) == self.history_id and len(history) >= self.sent else 0
        self.events.put(("step", self.label, step, total, begin, list(history[begin:])))
        self.history_id, self.sent = id(history), len(history)
