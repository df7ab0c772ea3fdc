"""Test-wide settings: the package speaks English in tests and in the kernels they start (a Chinese locale on the
developer's machine must not change what the English notebooks and checkers print); the Chinese notebooks choose
their language themselves (`rlvr.set_language("zh_CN")`).

`--numerics default` runs the session as another CPU would compute: PyTorch's portable kernels instead of this CPU's
vector ones (`ATEN_CPU_CAPABILITY=default`, what every x86 CPU has) and training on two threads instead of one
(`RLVR_THREADS`), each of which rounds floats differently. Every claim test must pass both ways (`.ci/run` runs `-m
claims` and the notebooks again so); the cache keys say how a run was computed, so nothing cached one way answers for
the other."""

import os
import sys

import pytest

os.environ["RLVR_LANG"] = "en"

NUMERICS = {  # --numerics choice -> the environment it sets before torch is imported (read once, at import)
    "native": {},
    "default": {"ATEN_CPU_CAPABILITY": "default", "RLVR_THREADS": "2"},
}


def pytest_addoption(parser):
    """--numerics: compute the whole session the native way (default) or as another CPU would."""
    parser.addoption(
        "--numerics",
        choices=sorted(NUMERICS),
        default="native",
        help=(
            "default: ATEN_CPU_CAPABILITY=default and training on two threads, for this session and the kernels it "
            "starts"
        ),
    )


def pytest_configure(config):
    """Set the chosen numerics' environment; refuse if torch is already imported (it would keep its own)."""
    chosen = NUMERICS[config.getoption("--numerics")]
    if chosen and "torch" in sys.modules and any(os.environ.get(k) != v for k, v in chosen.items()):
        raise pytest.UsageError("--numerics must be set before torch is imported: run it as a separate pytest call")
    os.environ.update(chosen)


def pytest_report_header(config):
    """How this session computes (the cache keys' `numerics`), on pytest's first lines."""
    from rlvr.cache import numerics

    return "numerics: " + ", ".join(f"{k}={v}" for k, v in numerics().items())
