"""Progress of the report's slow stages on a terminal (a large run takes many seconds): one line per
stage with its counts and, when it ends, its time. Nothing is printed when stderr is not a terminal
(make run's log, pipes, tests), so the report's output stays what it was.

    with progress.stage("trace host-load-r1.trace", "83,000 events"):
        ...

prints `spinlab-report: trace host-load-r1.trace (83,000 events) ... 2.1 s`. `enabled()` says
whether lines are printed; SPINLAB_PROGRESS=1 forces them on (and 0 off), for testing.
"""
import contextlib
import os
import sys
import time


def enabled(stream=None) -> bool:
    forced = os.environ.get("SPINLAB_PROGRESS")
    if forced in ("0", "1"):
        return forced == "1"
    stream = stream or sys.stderr
    return hasattr(stream, "isatty") and stream.isatty()


def count(n: int, what: str) -> str:
    """'1,000,000 long waits'."""
    return f"{n:,} {what}"


@contextlib.contextmanager
def stage(name: str, counts: str = "", stream=None):
    stream = stream or sys.stderr
    on = enabled(stream)
    if on:
        stream.write(f"spinlab-report: {name}" + (f" ({counts})" if counts else "") + " ...")
        stream.flush()
    t = time.monotonic()
    try:
        yield
    finally:
        if on:
            stream.write(f" {time.monotonic() - t:.1f} s\n")
            stream.flush()
