"""Jobs for tests/test_parallel.py, in a module of their own so that a spawned worker process can import them."""

import os
import signal
import time

from rlvr.cache import TMP_SUFFIX
from rlvr.config import cache_dir, training_threads
from rlvr.train import RLConfig, run, train_rl

TINY = dict(prompts_per_step=8, group_size=4)


def tiny_config(seed: int = 0, steps: int = 3) -> RLConfig:
    """A small GRPO run (8 prompts x 4 answers) from the shipped warm-up."""
    return RLConfig(steps=steps, seed=seed, **TINY)


def tiny_run(seed: int = 0, steps: int = 3, on_step=None):
    """A small GRPO run through the cache (so it trains in a worker when the cache does not hold it)."""
    return run(tiny_config(seed, steps), on_step=on_step, progress=False)


def fails_after_training(on_step=None):
    """Trains two steps, then fails as a bug in a job would."""
    train_rl(tiny_config(steps=2), on_step=on_step, progress=False)
    raise ValueError("the run's own bug\nwith a second line nobody should see")


def stubborn(on_step=None):
    """Trains one step (so it runs in a worker), then holds a half-written checkpoint, deaf to SIGTERM, until killed."""
    train_rl(tiny_config(steps=1), progress=False)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    (cache_dir() / f"rl-v0-x.pt.{os.getpid()}.half{TMP_SUFFIX}").write_bytes(b"half a checkpoint")
    on_step(1, 10, [{"accuracy": 0.0}])
    time.sleep(120)


def dies_at_once(*args):
    """A worker that stops before taking any job (as one does that cannot run its script's top level again)."""
    os._exit(3)


def niceness(tag: str = "", on_step=None):
    """How much lower than normal the priority of the process that runs it is (a job: it refuses to run inside
    `loading_only`, as training does)."""
    with training_threads():
        return os.nice(0) if hasattr(os, "nice") else 0


def clock(seconds: float, name: str, on_step=None) -> tuple[float, float]:
    """When it started and when it finished, sleeping `seconds` between (a job: it refuses inside `loading_only`)."""
    with training_threads():
        start = time.time()
        time.sleep(seconds)
        return start, time.time()


def surroundings(tag: str = "", on_step=None) -> dict:
    """What the process that runs it computes with and where it writes: rlvr.cache.numerics(), the cache folder and
    the torch modules it had imported before the job (a job: it refuses to run inside `loading_only`)."""
    import sys

    from rlvr.cache import numerics

    with training_threads():
        return {
            "numerics": numerics(),
            "cache": str(cache_dir()),
            "marker": os.environ.get("RLVR_TEST_MARKER"),
            "dynamo_imported": "torch._dynamo" in sys.modules,
        }
