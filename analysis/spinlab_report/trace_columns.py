"""A spinlab trace as columns: one numpy structured array per event type.

The trace file is written by a guest and is bad input until checked, so it is read by the one
reader that checks it, spinlab-collect: `spinlab-collect trace export FILE --format columns -o DIR`
writes DIR/meta.json ({"format": "spinlab-trace-columns", "version": 1, "tsc_hz", "cpu_count",
"trace_abi_version", "events_discarded", "events": {name: count}}) and DIR/<event name>.npy, a packed structured array
per event type: the common columns tsc, cpu, thread_id, process_id (and index, the event's place
in the file, where the export writes it), then the payload's fields under their names in
spinlab/trace.h (char arrays as bytes). Nothing here knows a byte layout.

`read(path)`: a native trace file (exported to a temporary directory) or such a directory, as
`TraceColumns`: each type's rows sorted by time, then CPU, then file order, which is the order in
which a CTF reader (babeltrace2) delivers them.
`TraceColumns.rows(names)`: the events of a few types merged in that order, as (name, fields)
pairs with plain Python values: for the sequential state machines over rare event types.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np

FORMAT, VERSION = "spinlab-trace-columns", 1
TID, PID = "event_thread_id", "event_process_id"  # the common context's thread and process (beside a payload's own)
COMMON = ("tsc", "cpu", TID, PID)
_EMPTY = np.zeros(0, dtype=[(n, "<u8") for n in COMMON])


def find_collect() -> str:
    """spinlab-collect: the source tree's build, else the installed layout
    (share/spinlab/analysis/spinlab_report beside bin/), else PATH."""
    here = os.path.dirname(os.path.realpath(__file__))
    for p in (os.path.join(here, "..", "..", "build", "host", "bin", "spinlab-collect"),
              os.path.join(here, "..", "..", "..", "..", "bin", "spinlab-collect")):
        if os.access(p, os.X_OK):
            return os.path.abspath(p)
    found = shutil.which("spinlab-collect")
    if not found:
        raise FileNotFoundError("spinlab-collect not found (build it: make tools) to read the trace")
    return found


def _order(a: np.ndarray) -> np.ndarray:
    """Rows by (tsc, cpu, file order): lexsort is stable, so without an index column a type's
    own file order breaks the ties."""
    keys = (a["cpu"], a["tsc"]) if "index" not in a.dtype.names else (a["index"], a["cpu"], a["tsc"])
    return np.lexsort(keys)


@dataclasses.dataclass
class TraceColumns:
    tsc_hz: int
    cpu_count: int
    discarded: int
    events: dict  # event name -> structured array, sorted by (tsc, cpu, file order)
    abi_version: int | None = None  # the trace file's ABI version (None: an export that did not say)

    def of(self, name: str) -> np.ndarray:
        """The events of one type (an empty array with the common columns when there are none)."""
        return self.events.get(name, _EMPTY)

    def count(self) -> int:
        return sum(a.size for a in self.events.values())

    def rows(self, names) -> list:
        """(name, {field: value}) of every event of these types, in trace order. Text fields are
        str; arrays are lists."""
        parts = [(n, self.events[n]) for n in names if n in self.events and self.events[n].size]
        if not parts:
            return []
        tsc = np.concatenate([a["tsc"] for _, a in parts])
        cpu = np.concatenate([a["cpu"] for _, a in parts])
        kind = np.concatenate([np.full(a.size, k) for k, (_, a) in enumerate(parts)])
        row = np.concatenate([np.arange(a.size) for _, a in parts])
        if all("index" in a.dtype.names for _, a in parts):
            order = np.lexsort((np.concatenate([a["index"] for _, a in parts]), cpu, tsc))
        else:
            order = np.lexsort((row, kind, cpu, tsc))
        dicts = [_dicts(a) for _, a in parts]
        return [(parts[k][0], dicts[k][r]) for k, r in zip(kind[order].tolist(), row[order].tolist())]


def _dicts(a: np.ndarray) -> list:
    """Each row as {field: value}: ints, str for char arrays, lists for the other arrays."""
    names = a.dtype.names
    conv = {n: (lambda v: v.decode("utf-8", "replace")) if a.dtype[n].kind == "S" else
            (lambda v: v.tolist()) if a.dtype[n].shape else None for n in names}
    conv = {n: f for n, f in conv.items() if f is not None}
    out = [dict(zip(names, r)) for r in a.tolist()]
    for d in out if conv else ():
        for n, f in conv.items():
            d[n] = f(d[n])
    return out


def load_dir(d: str) -> TraceColumns:
    """A column export's directory; ValueError naming what is wrong with it."""
    meta_path = os.path.join(d, "meta.json")
    try:
        with open(meta_path) as f:
            meta = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{meta_path}: not a column export of a trace ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise ValueError(f"{meta_path}: format {meta.get('format') if isinstance(meta, dict) else meta!r} "
                         f"version {meta.get('version') if isinstance(meta, dict) else '?'}, "
                         f"want {FORMAT} version {VERSION}")
    for k in ("tsc_hz", "cpu_count", "events_discarded"):
        if not isinstance(meta.get(k), int) or meta[k] < 0:
            raise ValueError(f"{meta_path}: {k} is {meta.get(k)!r}, want a count")
    events = {}
    for name in meta.get("events") or {}:
        path = os.path.join(d, name + ".npy")
        try:
            a = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise ValueError(f"{path}: {e}") from None
        missing = [c for c in COMMON if a.dtype.names is None or c not in a.dtype.names]
        if missing or a.ndim != 1:
            raise ValueError(f"{path}: not a 1-D table with the columns {', '.join(COMMON)}")
        events[name] = a[_order(a)]
    if not meta["tsc_hz"]:
        raise ValueError(f"{meta_path}: tsc_hz is 0")
    abi = meta.get("trace_abi_version")
    return TraceColumns(meta["tsc_hz"], meta["cpu_count"], meta["events_discarded"], events,
                        abi if isinstance(abi, int) and not isinstance(abi, bool) else None)


def read(path: str) -> TraceColumns:
    """A native trace file through spinlab-collect's column export, or an export's directory."""
    if os.path.isdir(path):
        return load_dir(path)
    with tempfile.TemporaryDirectory(prefix="spinlab-trace-") as d:
        r = subprocess.run([find_collect(), "trace", "export", path, "--format", "columns", "-o", d],
                           capture_output=True, text=True)
        # 1: damage named on stderr, the rest exported
        if r.returncode not in (0, 1) or not os.path.exists(os.path.join(d, "meta.json")):
            reason = r.stderr.strip() or "spinlab-collect exported nothing"
            for prefix in ("spinlab-collect: ", f"{path}: "):  # its message names the file too
                reason = reason[len(prefix):] if reason.startswith(prefix) else reason
            raise ValueError(f"{path}: {reason}")
        return load_dir(d)
