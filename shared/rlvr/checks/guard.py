"""Running a learner's function safely: a time limit, what it printed kept short, every exception caught.

`call_guarded(fn, args, kwargs, seconds)` returns a `Call` and never raises (except for a real KeyboardInterrupt,
the learner pressing "stop"). The learner's function may raise anything (SystemExit from `exit()` included), print
without end, or never return; the checker then reports it in one sentence and the kernel stays usable.

The time limit (`time_limit`), and why it is built this way:
- In the main thread (where Jupyter runs a cell) it uses SIGALRM (`signal.setitimer`): the handler raises
  `TimeLimitExceeded` inside the learner's code, which interrupts `time.sleep` and pure-Python loops at once. It is
  installed only for the call and removed afterwards (the previous handler and timer come back), and only when no one
  else uses SIGALRM (e.g. pytest-timeout); the handler re-arms itself every 0.2 s, so a learner's `except Exception`
  or bare `except:` that swallows it once does not stop the clock (one that swallows it in a loop forever cannot be
  stopped from inside the process: the stop button then interrupts the kernel as usual).
- It raises only while the learner's code runs (a flag set around the call), never in the checker's code just before
  or after it: a context manager would leave a gap between the end of its block and its clean-up where an alarm
  could land unhandled and keep firing.
- Elsewhere (another thread, Windows, SIGALRM in use) a watchdog thread raises `TimeLimitExceeded` in the calling
  thread with `PyThreadState_SetAsyncExc`: pure-Python loops stop at once, a C call (one long `time.sleep`) only when it
  returns. No thread is left running the learner's code and nothing outlives the call.
- We do not use `_thread.interrupt_main()`: its KeyboardInterrupt cannot be told apart from the learner pressing stop,
  and in Jupyter it goes through the kernel's SIGINT handling.
`TimeLimitExceeded` derives from BaseException, so a learner's `except Exception:` does not swallow it.

Calls also run with torch's grad mode and default dtype restored afterwards, so a function that switches them off
globally (`torch.set_grad_enabled(False)`) cannot break the notebook's later cells; and in Jupyter, where `exit()`
does not raise but shuts the kernel down after the cell, `exit()` raises SystemExit during the call instead.
"""

from __future__ import annotations

import builtins
import contextlib
import ctypes
import inspect
import io
import re
import signal
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from rlvr.i18n import N_, _, ngettext

DEFAULT_LIMIT_S = 5.0  # a few seconds per call: the exercises' functions take milliseconds, even on a busy machine
RETRY_S = 0.2  # the clock re-fires this often after the limit, in case the learner's code swallowed it
MAX_PRINTED_LINES = 3  # lines of a learner's output kept for the message
MAX_LINE_CHARS = 160
MAX_ERROR_CHARS = 300


class TimeLimitExceeded(BaseException):
    """Raised inside a learner's function when its time limit has passed."""


# ----------------------------------------------------------------------------------------------- the time limit
def _signal_usable() -> bool:
    """SIGALRM can be used: main thread, POSIX, and no one else's handler or timer is installed."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return False
    if signal.getitimer(signal.ITIMER_REAL) != (0.0, 0.0):
        return False
    return signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, signal.SIG_IGN, None)


class _Watch:
    """Whether the time limit is still active, and whether the learner's code is running right now.

    The clock raises only while `inside` is True (in the learner's code), never in the checker's own code around
    it, so no exception can land where nothing would catch it."""

    def __init__(self):
        self.active = True
        self.inside = False

    def invoke(self, fn: Callable, args: tuple, kwargs: dict):
        """Call the learner's function with `inside` set."""
        self.inside = True
        try:
            return fn(*args, **kwargs)
        finally:
            self.inside = False

    def stop(self, lock: threading.Lock | None = None) -> None:
        """Deactivate; retried if a last TimeLimitExceeded lands while doing it."""
        while True:
            try:
                if lock is None:
                    self.active = False
                else:
                    with lock:
                        self.active = False
                return
            except TimeLimitExceeded:
                continue


def _with_signal(fn: Callable, args: tuple, kwargs: dict, seconds: float):
    """fn(*args, **kwargs) with SIGALRM raising TimeLimitExceeded in it after `seconds`, then every RETRY_S."""
    watch = _Watch()

    def handler(signum, frame):
        if not watch.active:
            return
        signal.setitimer(signal.ITIMER_REAL, RETRY_S)  # again soon, in case the learner's code swallows it
        if watch.inside:
            raise TimeLimitExceeded(seconds)

    previous = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        return watch.invoke(fn, args, kwargs)
    finally:
        watch.stop()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _raise_in(thread_id: int, exception: type | None) -> None:
    """Schedule `exception` in the thread `thread_id` (None clears a scheduled one)."""
    target = ctypes.py_object(exception) if exception is not None else None
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), target)


def _with_watchdog(fn: Callable, args: tuple, kwargs: dict, seconds: float):
    """fn(*args, **kwargs) with a watchdog thread raising TimeLimitExceeded in this thread after `seconds`."""
    watch, target, done, lock = _Watch(), threading.get_ident(), threading.Event(), threading.Lock()

    def watchdog():
        wait = seconds
        while not done.wait(wait):
            with lock:
                if not watch.active:
                    return
                if watch.inside:
                    _raise_in(target, TimeLimitExceeded)
            wait = RETRY_S

    try:
        threading.Thread(target=watchdog, name="rlvr-check-time-limit", daemon=True).start()
        return watch.invoke(fn, args, kwargs)
    finally:
        watch.stop(lock)
        done.set()
        _raise_in(target, None)  # clear one scheduled too late


def run_with_time_limit(fn: Callable, args: tuple = (), kwargs: dict | None = None, seconds: float | None = None):
    """fn(*args, **kwargs), with TimeLimitExceeded raised inside it once `seconds` have passed (None: no limit)."""
    kwargs = kwargs or {}
    if seconds is None:
        return fn(*args, **kwargs)
    if _signal_usable():
        return _with_signal(fn, args, kwargs, seconds)
    return _with_watchdog(fn, args, kwargs, seconds)


# ----------------------------------------------------------------------------------------------- printed output
class OutputTail(io.TextIOBase):
    """A text stream that keeps the first MAX_PRINTED_LINES lines written to it and counts the rest."""

    def __init__(self):
        super().__init__()
        self.kept: list[str] = []
        self.lines = 0  # complete lines written
        self._partial = ""  # the line being written, while fewer than MAX_PRINTED_LINES are kept
        self._open = False  # the last character written was not a newline

    def writable(self) -> bool:
        """Always."""
        return True

    def write(self, text: str) -> int:
        """Keep the first lines, count every line."""
        text = str(text)
        if not text:
            return 0
        if len(self.kept) < MAX_PRINTED_LINES:
            pieces = (self._partial + text).split("\n")
            self._partial = pieces.pop()[: MAX_LINE_CHARS + 1]
            for line in pieces:
                self._keep(line)
        self.lines += text.count("\n")
        self._open = not text.endswith("\n")
        return len(text)

    def _keep(self, line: str) -> None:
        """Store one line (shortened) if fewer than MAX_PRINTED_LINES are stored."""
        if len(self.kept) < MAX_PRINTED_LINES:
            self.kept.append(_shorten(line))

    def summary(self) -> str:
        """'' if nothing was printed, else how many lines and the first ones, for a message."""
        total = self.lines + (1 if self._open else 0)
        if total == 0:
            return ""
        shown = self.kept + ([_shorten(self._partial)] if self._partial and len(self.kept) < MAX_PRINTED_LINES else [])
        if total <= len(shown):
            head = ngettext("Your function printed {n} line:", "Your function printed {n} lines:", total)
        else:
            head = ngettext(
                "Your function printed {n} line (the first {shown} shown):",
                "Your function printed {n} lines (the first {shown} shown):",
                total,
            )
        return "\n".join([head.format(n=total, shown=len(shown)), *(f"    {line}" for line in shown)])


def _shorten(line: str) -> str:
    """A printed line cut to MAX_LINE_CHARS."""
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 3] + "..."


@contextlib.contextmanager
def captured_output(tail: OutputTail):
    """Send sys.stdout and sys.stderr to `tail` inside the block."""
    with contextlib.redirect_stdout(tail), contextlib.redirect_stderr(tail):
        yield


# ----------------------------------------------------------------------------------------------- one guarded call
@dataclass
class Call:
    """What one guarded call of a learner's function did."""

    value: Any = None
    error: BaseException | None = None
    printed: OutputTail = field(default_factory=OutputTail)
    warning: str = ""  # the first warning it raised, as one line ('' if none)
    seconds: float = 0.0
    limit: float | None = None

    @property
    def timed_out(self) -> bool:
        """The call was stopped by its time limit."""
        return isinstance(self.error, TimeLimitExceeded)

    @property
    def not_attempted(self) -> bool:
        """The function is still the stub (raised NotImplementedError)."""
        return isinstance(self.error, NotImplementedError)


def _ipython_shell():
    """The running IPython shell (a Jupyter kernel's), or None."""
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None


@contextlib.contextmanager
def exit_refused():
    """In Jupyter, `exit()` does not raise: it asks the kernel to shut down after the cell (all state lost). Inside
    the block it raises SystemExit instead, which the check reports."""
    shell = _ipython_shell()
    if shell is None:
        yield
        return

    def refuse(*args, **kwargs):
        raise SystemExit("exit() called")

    own = "ask_exit" in vars(shell)
    previous = vars(shell).get("ask_exit")
    shell.ask_exit = refuse  # an instance attribute shadows the method for the block
    try:
        yield
    finally:
        if own:
            shell.ask_exit = previous
        else:
            del shell.ask_exit


@contextlib.contextmanager
def torch_state_kept():
    """Restore torch's grad mode and default dtype after the block, whatever the block did to them."""
    grad, dtype = torch.is_grad_enabled(), torch.get_default_dtype()
    try:
        yield
    finally:
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)


def call_guarded(
    fn: Callable,
    args: tuple = (),
    kwargs: dict | None = None,
    seconds: float | None = DEFAULT_LIMIT_S,
    printed: OutputTail | None = None,
) -> Call:
    """Call `fn(*args, **kwargs)` under a time limit with its output captured (into `printed` if given, e.g. one
    tail for a whole training run); a Call, never an exception (but a KeyboardInterrupt that did not come from the
    time limit: the learner pressed stop)."""
    call = Call(limit=seconds, printed=printed if printed is not None else OutputTail())
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="warn"), torch_state_kept(), exit_refused():
        warnings.simplefilter("always")
        try:
            with captured_output(call.printed):
                call.value = run_with_time_limit(fn, args, kwargs, seconds)
        except KeyboardInterrupt:
            raise
        except BaseException as error:  # noqa: BLE001 - a learner's function may raise anything, SystemExit included
            call.error = error
        call.warning = _first_warning(caught)
    call.seconds = time.perf_counter() - start
    return call


def _first_warning(caught: list) -> str:
    """'WarningType: message' for the first warning raised, else ''."""
    if not caught:
        return ""
    first = caught[0]
    return f"{first.category.__name__}: {' '.join(str(first.message).split())}"


# ----------------------------------------------------------------------------------------------- errors in words
def one_line_error(error: BaseException) -> str:
    """`TypeName: message` on one line, shortened."""
    text = " ".join(str(error).split())
    line = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return line if len(line) <= MAX_ERROR_CHARS else line[: MAX_ERROR_CHARS - 3] + "..."


TEMPLATE_MEANING = N_(
    "your function's parameters differ from the template's: keep the signature the notebook gave you."
)
ERROR_EXPLANATIONS: list[tuple[type, str, str]] = [  # (exception type, regex on its message, what it means)
    (
        TypeError,
        r"unexpected keyword argument|positional argument|required positional|takes \d+ positional",
        TEMPLATE_MEANING,  # only when the checker's own call of the function failed (see explain_error)
    ),
    (
        RuntimeError,
        r"does not require grad and does not have a grad_fn",
        N_(
            "your loss is not connected to the parameters: it was computed without a graph (under no_grad, after "
            "detaching, or from log-probs recorded while sampling); compute it from log-probs that keep their graph."
        ),
    ),
    (
        RuntimeError,
        r"leaf Variable that requires grad is being used in an in-place operation",
        N_("your function changes an input tensor in place; compute new tensors instead of overwriting its inputs."),
    ),
    (
        RuntimeError,
        r"modified by an inplace operation",
        N_(
            "a tensor needed for the gradient was changed in place after it was used; write the result to a new tensor."
        ),
    ),
    (
        RuntimeError,
        r"must match the size of tensor",
        N_(
            "two tensors of different shapes were combined (e.g. per-answer values [B] with per-token ones [B, T]): "
            "give the smaller one the missing axis so that it lines up with the other."
        ),
    ),
    (
        RuntimeError,
        r"Boolean value of Tensor with more than one value is ambiguous",
        N_(
            "a tensor of several values went where Python needs one True or False (Python's min or max, an if, an "
            "and/or): use torch's elementwise functions instead (torch.minimum, torch.maximum, torch.where)."
        ),
    ),
    (
        RuntimeError,
        r"could not infer output dtype",
        N_("the mean of a boolean tensor (a mask) is not defined: turn it into floats first."),
    ),
    (
        RuntimeError,
        r"with a bool tensor is not supported",
        N_("arithmetic on a boolean tensor (a mask): negate it with ~, or turn it into floats first."),
    ),
    (
        RuntimeError,
        r"view size is not compatible",
        N_("a view of a tensor that is not contiguous: reshape it instead of viewing it."),
    ),
    (
        RuntimeError,
        r"shape '\[.*\]' is invalid for input of size",
        N_("a reshape into groups does not fit the number of elements: check which axis holds the group size."),
    ),
    (
        RuntimeError,
        r"expected scalar type|same dtype|found dtype \w+ but expected",
        N_("tensors of different dtypes were mixed: keep the dtype of the inputs."),
    ),
    (NameError, r"", N_("your function uses a name that is not defined: run the cell that defines it, or import it.")),
    (ZeroDivisionError, r"", N_("a division by zero: look for a count or a spread that can be 0 on this case.")),
    (RecursionError, r"", N_("your function calls itself without end.")),
    (SystemExit, r"", N_("your function called exit(): return a value instead of ending the program.")),
]


CALL_ERROR = re.compile(  # what Python says when a call's arguments do not fit the function called
    r"^(?P<callee>[\w.<>]+)\(\) (?:got an unexpected keyword argument '(?P<keyword>\w+)'"
    r"|(?P<count>missing \d+ required|takes \d+|takes from \d+|got multiple values|got some positional-only))"
)


CHECKS_DIR = Path(__file__).resolve().parent


def _raised_in_learner_code(error: BaseException) -> bool:
    """The exception comes from a frame of the learner's own code, not from the checker's call of their function
    (the guard's, or a gradient case's: there a TypeError means the checker's arguments do not fit the function)."""
    frames = _frames(error)
    return bool(frames) and Path(frames[0].f_code.co_filename).resolve().parent != CHECKS_DIR


def _frames(error: BaseException) -> list:
    """The frames of an exception's traceback, innermost first."""
    frames, tb = [], error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames[::-1]


def _callee(error: BaseException, qualname: str) -> Callable | None:
    """The function `qualname` ('sample', 'TinyTransformer.forward') as the innermost frame that can see it sees it
    (a decorator's wrapper may stand between the caller and the function): a local, a global, a builtin, or an
    attribute of a module imported there (e.g. `task.score_batch`)."""
    head, *rest = qualname.split(".")
    for frame in _frames(error):
        found = next((space[head] for space in (frame.f_locals, frame.f_globals) if head in space), None)
        if found is None:
            modules = [v for v in frame.f_globals.values() if isinstance(v, type(sys))]
            found = next((getattr(m, head) for m in modules if hasattr(m, head)), None)
        for name in rest:
            found = getattr(found, name, None)
        if callable(found) and getattr(found, "__name__", "") == qualname.split(".")[-1]:
            return found
    found = getattr(builtins, qualname, None)
    return found if callable(found) else None


def parameter_list(fn: Callable) -> str:
    """A function's parameter names, comma-separated ('' if Python cannot tell them)."""
    try:
        names = [p.name for p in inspect.signature(fn).parameters.values() if p.name != "self"]
    except (TypeError, ValueError):
        return ""
    return ", ".join(names)


def call_problem_in_learner_code(error: BaseException) -> str:
    """For a TypeError the learner's code got by calling a function with arguments it does not take (a wrong keyword
    to a package function, say): one sentence naming the function and its parameters; else ''."""
    if not isinstance(error, TypeError) or not _raised_in_learner_code(error):
        return ""
    found = CALL_ERROR.match(str(error))
    if found is None:
        return ""
    callee = found.group("callee")
    params = parameter_list(_callee(error, callee) or (lambda: None))
    if found.group("keyword"):
        if params:
            text = _("`{callee}()` got an unexpected keyword '{keyword}'; its parameters are {params}.")
        else:
            text = _("`{callee}()` got an unexpected keyword '{keyword}'.")
        return text.format(callee=callee, keyword=found.group("keyword"), params=params)
    detail = " ".join(str(error).split())
    if params:
        text = _(
            "your code calls `{callee}()` with arguments it does not take ({detail}); its parameters are {params}."
        )
    else:
        text = _("your code calls `{callee}()` with arguments it does not take ({detail}).")
    return text.format(callee=callee, detail=detail, params=params)


def explain_error(error: BaseException) -> str:
    """One sentence saying what a learner's exception usually means (in the current language), or ''."""
    text = str(error)
    for kind, pattern, meaning in ERROR_EXPLANATIONS:
        if meaning == TEMPLATE_MEANING and _raised_in_learner_code(error):
            continue  # the learner's code called something wrongly, not the checker their function
        if isinstance(error, kind) and re.search(pattern, text):
            return _(meaning)
    return ""


def failure_sentence(call: Call, what: str = N_("your function")) -> str:
    """The message for a call that timed out or raised: what happened, what it usually means, what it printed."""
    if call.timed_out:
        text = _(
            "{what} did not finish within {seconds} s (stopped there): look for a loop that never ends, a sleep, "
            "or waiting for input."
        ).format(what=_(what), seconds=f"{call.limit:g}")
    elif call_problem_in_learner_code(call.error):
        text = _("{what} raised TypeError: {problem}").format(
            what=_(what), problem=call_problem_in_learner_code(call.error)
        )
    else:
        meaning = explain_error(call.error)
        text = _("{what} raised {error}").format(what=_(what), error=one_line_error(call.error))
        if meaning:
            text = _("{what} raised {error}. {meaning}").format(
                what=_(what), error=one_line_error(call.error), meaning=meaning[0].upper() + meaning[1:]
            )
    return with_printed(text, call)


def with_printed(message: str, call: Call) -> str:
    """`message` followed by the first lines the call printed (if any) and its first warning."""
    extra = [_("(warning seen: {warning})").format(warning=call.warning)] if call.warning else []
    printed = call.printed.summary()
    return "\n".join([message, *extra, *([printed] if printed else [])])


def describe(value: Any) -> str:
    """Short name of a value's type with an article, e.g. `a torch.Tensor`, `a float`, `None`."""
    if value is None:
        return "None"
    if isinstance(value, torch.Tensor):
        return _("a torch.Tensor")
    if isinstance(value, np.ndarray):
        return _("a numpy array")
    name = type(value).__name__
    text = _("an {type}") if name[0].lower() in "aeiou" else _("a {type}")
    return text.format(type=name)
