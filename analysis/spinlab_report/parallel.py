"""Independent pieces of the report on every CPU: forked worker processes, one piece at a time each.

    results = parallel.forked_map(fn, items, big=True)

is [fn(x) for x in items], in order, computed in up to os.cpu_count() forked processes when `big`
says the work is worth a process start (~50 ms each) and there is more than one item and CPU.
The children are forked after fn is set, so fn (a closure is fine) and the data it reads (a loaded
run, the attributions computed so far) are inherited, not pickled; only items and results cross,
so each must pickle (file names, indices, Figure records, snapshots of numpy columns). A child's side effects on the parent's objects are
lost: fn must return what the report needs. An exception in a child is raised in the parent.
SPINLAB_REPORT_WORKERS=1 keeps everything in this process (for profiling and debugging).
"""
import multiprocessing
import os


def workers(n_items: int) -> int:
    forced = os.environ.get("SPINLAB_REPORT_WORKERS")
    cpus = int(forced) if forced and forced.isdigit() and int(forced) > 0 else (os.cpu_count() or 1)
    return max(1, min(n_items, cpus))


_fn = None  # the function of the forked_map under way, inherited by its children


def _apply(x):
    return _fn(x)


def forked_map(fn, items, big: bool = True) -> list:
    global _fn
    items = list(items)
    n = workers(len(items)) if big else 1
    if n <= 1:
        return [fn(x) for x in items]
    _fn = fn
    try:
        with multiprocessing.get_context("fork").Pool(n) as pool:
            return pool.map(_apply, items, chunksize=1)
    finally:
        _fn = None
