"""Replaying a spinlab trace through a state machine, as Windows' kernel trace analysis does:
who ran where, for how long, who woke whom, and what the holder's CPU did during each long
spinlock wait.

The trace is read through babeltrace2's Python bindings (python3-bt2) over the CTF export
(`spinlab-collect trace export --format ctf`); a native trace file is exported to a temporary
directory first. That is the one reader here: field names are the ABI's (the CTF metadata is
generated from spinlab/trace.h), so nothing in this module knows a byte layout.

State: per CPU the thread running and since when (context switches), per thread the pending
system call and the last time it was readied. Times are guest TSC cycles; `tsc_hz` converts.

Results (`replay()` returns a `TraceAnalysis`):
- threads / processes: ids, names, start and end (None: before or after the trace), from thread
  and process events and the rundown at the session's start; processes that only appear as a
  thread's process id are listed with name None;
- cpu_use: per thread and per process, exact cycles from the context switches and the share the
  profile samples estimate, side by side; idle share per CPU (exact and sampled);
- syscalls: per call number count, p50, p99, max latency (cycles), enter to exit of one thread;
- top locks by total wait, top call sites (the acquire site only; the call stacks behind them,
  when the trace records them, are summed by trace_stacks.py into stacks/<phase>/);
- wakes: who woke whom (edges with counts), the wake-to-run delays (ready -> switched in), chains;
- long waits: each wait >= long_wait cycles with what the holder's CPU did during it: running the
  holder, another thread, idle, and (with the host timeline and clock) off-CPU on the host.
"""
from __future__ import annotations

import bisect
import dataclasses
import os
import shutil
import subprocess
import tempfile

import numpy as np

from .buckets import LONG_WAIT_CYCLES
from .contract import OFF_STATES, UNKNOWN_STATE

LONG_WAIT_DEFAULT = LONG_WAIT_CYCLES  # without the runner's long_waits_min_cycles


@dataclasses.dataclass
class Event:
    tsc: int
    cpu: int
    name: str
    tid: int
    pid: int
    f: dict


@dataclasses.dataclass
class TraceAnalysis:
    tsc_hz: int
    cpus: int
    start: int
    end: int
    events: int
    discarded_events: int
    threads: list
    processes: list
    cpu_use_threads: list
    cpu_use_processes: list
    cpu_idle: list
    syscalls: list
    top_locks: list
    top_call_sites: list
    wake_edges: list
    wake_delays: list  # cycles, every ready followed by a switch-in
    wake_chains: list
    long_waits: list
    run_intervals: dict  # cpu -> [(start, end, tid)]


# --- reading ----------------------------------------------------------------------------------

def _find_collect() -> str:
    here = os.path.dirname(os.path.realpath(__file__))
    # The source tree's build, else the installed layout (share/spinlab/analysis/spinlab_report
    # beside bin/), else PATH.
    for p in (os.path.join(here, "..", "..", "build", "host", "bin", "spinlab-collect"),
              os.path.join(here, "..", "..", "..", "..", "bin", "spinlab-collect")):
        if os.access(p, os.X_OK):
            return os.path.abspath(p)
    found = shutil.which("spinlab-collect")
    if not found:
        raise FileNotFoundError("spinlab-collect not found (build it: make host) to export the trace as CTF")
    return found


def _native():
    """babeltrace2's C API as the bindings load it (bt2._native_bt, the SWIG module; bt2.native_bt
    only wraps each function in a Python one)."""
    from bt2 import native_bt
    return getattr(native_bt, "_native_bt", native_bt)


def _value_reader(v):
    """How to read one payload member through babeltrace2's C API, from its first wrapper: a
    function of the member's field pointer (the bindings' wrappers cost ~8 µs per field)."""
    import bt2
    n = _native()
    if isinstance(v, bt2._StringFieldConst):
        return n.field_string_get_value
    if isinstance(v, bt2._ArrayFieldConst):
        element = v.cls.element_field_class
        if not isinstance(element, bt2._IntegerFieldClassConst):
            return None
        get = n.field_integer_signed_get_value if isinstance(element, bt2._SignedIntegerFieldClassConst) \
            else n.field_integer_unsigned_get_value
        return lambda f: [get(n.field_array_borrow_element_field_by_index_const(f, i))
                          for i in range(n.field_array_get_length(f))]
    if isinstance(v, bt2._SignedIntegerFieldConst):
        return n.field_integer_signed_get_value
    if isinstance(v, bt2._UnsignedIntegerFieldConst):
        return n.field_integer_unsigned_get_value
    return None  # anything else: read through the wrappers


def _slow_payload(e) -> dict:
    import bt2
    return {k: str(v) if isinstance(v, bt2._StringFieldConst) else (
        [int(x) for x in v] if isinstance(v, bt2._ArrayFieldConst) else int(v)) for k, v in e.payload_field.items()}


def _layout(e) -> tuple:
    """An event class's name, payload readers (None: some member only the wrappers read), and the
    (index, reader) of thread_id and process_id in the common context and cpu_id in the packet's."""
    def at(struct, name):
        keys = list(struct.keys())
        return keys.index(name), _value_reader(struct[name])
    readers = [(k, _value_reader(v)) for k, v in e.payload_field.items()]
    return (e.name, readers if all(r for _, r in readers) else None, at(e.common_context_field, "thread_id"),
            at(e.common_context_field, "process_id"), at(e.packet.context_field, "cpu_id"))


def read_ctf(path: str) -> tuple:
    """(events sorted by time, tsc_hz, cpu count, discarded events) of a CTF export.

    Field names come from the metadata. Each event class's members are looked up once (names and
    kinds, from the bindings' wrappers on its first event); every later event is read through the
    C API by member index, about 10x faster than the wrappers (a trace of 125k long waits: 14 s of
    CPU through the wrappers)."""
    import bt2
    n = _native()
    events, discarded, hz, cpus = [], 0, None, 0
    layouts = {}  # event class -> (name, payload [(field name, reader)] or None, thread, process, cpu readers)
    member = n.field_structure_borrow_member_field_by_index_const
    for m in bt2.TraceCollectionMessageIterator(path):
        if type(m) is bt2._EventMessageConst:
            ev = n.message_event_borrow_event_const(m._ptr)
            key = int(n.event_borrow_class_const(ev))
            lay = layouts.get(key)
            if lay is None:
                lay = layouts[key] = _layout(m.event)
                if hz is None:
                    env = m.event.packet.stream.trace.environment
                    hz, cpus = int(env["tsc_hz"]), int(env["cpu_count"])
            name, readers, (ti, tr), (pi, pr), (ci, cr) = lay
            ctx = n.event_borrow_common_context_field_const(ev)
            pctx = n.packet_borrow_context_field_const(n.event_borrow_packet_const(ev))
            if readers is None:
                f = _slow_payload(m.event)
            else:
                pay = n.event_borrow_payload_field_const(ev)
                f = {k: r(member(pay, i)) for i, (k, r) in enumerate(readers)}
            events.append(Event(n.clock_snapshot_get_value(n.message_event_borrow_default_clock_snapshot_const(m._ptr)),
                                cr(member(pctx, ci)), name, tr(member(ctx, ti)), pr(member(ctx, pi)), f))
        elif type(m) is bt2._DiscardedEventsMessageConst:
            discarded += m.count or 0
    if hz is None:
        raise ValueError(f"{path}: no events")
    events.sort(key=lambda e: (e.tsc, e.cpu))
    return events, hz, cpus, discarded


def read_trace(path: str) -> tuple:
    """A CTF directory as it is, or a native trace file through a CTF export."""
    if os.path.isdir(path):
        return read_ctf(path)
    with tempfile.TemporaryDirectory(prefix="spinlab-trace-") as d:
        r = subprocess.run([_find_collect(), "trace", "export", path, "--format", "ctf", "-o", d],
                           capture_output=True, text=True)
        if r.returncode not in (0, 1) or not os.listdir(d):  # 1: damage named on stderr, the rest exported
            raise ValueError(f"{path}: {r.stderr.strip() or 'spinlab-collect exported nothing'}")
        return read_ctf(d)


# --- the state machine --------------------------------------------------------------------------

def _pct(values, q):
    return int(np.percentile(np.asarray(values, dtype=float), q, method="inverted_cdf")) if values else None


class _Machine:
    def __init__(self, events, hz, cpus):
        self.ev, self.hz = events, hz
        self.cpus = max([cpus] + [e.cpu + 1 for e in events])
        self.start = events[0].tsc if events else 0
        self.end = events[-1].tsc if events else 0

    def threads_and_processes(self):
        threads, procs = {}, {}
        for e in self.ev:
            if e.name in ("thread-rundown", "thread-start", "thread-end"):
                t = threads.setdefault(e.f["thread_id"], {"thread_id": e.f["thread_id"], "process_id": e.f["process_id"],
                                                         "name": None, "start": None, "end": None})
                t["name"] = e.f["name"] or t["name"]
                t["process_id"] = e.f["process_id"]
                if e.name == "thread-start":
                    t["start"] = e.tsc
                if e.name == "thread-end":
                    t["end"] = e.tsc
            elif e.name in ("process-rundown", "process-start", "process-end"):
                p = procs.setdefault(e.f["process_id"], {"process_id": e.f["process_id"], "name": None,
                                                        "parent_id": e.f["parent_id"], "start": None, "end": None,
                                                        "exit_code": None})
                p["name"] = e.f["name"] or p["name"]
                if e.name == "process-start":
                    p["start"] = e.tsc
                if e.name == "process-end":
                    p["end"], p["exit_code"] = e.tsc, e.f["exit_code"]
        # Threads seen only running (no thread event) and processes seen only through threads.
        for e in self.ev:
            if e.name == "cswitch":
                for tid, pid in ((e.f["old_thread_id"], e.f["old_process_id"]),
                                 (e.f["new_thread_id"], e.f["new_process_id"])):
                    if tid:
                        threads.setdefault(tid, {"thread_id": tid, "process_id": pid, "name": None,
                                                 "start": None, "end": None})
        for t in threads.values():
            procs.setdefault(t["process_id"], {"process_id": t["process_id"], "name": None, "parent_id": None,
                                               "start": None, "end": None, "exit_code": None})
        return threads, procs

    def run_intervals(self):
        """cpu -> [(start, end, tid)] covering [first, last event] of the CPU; tid 0 = idle; None
        before the first context switch when the switch does not say who ran."""
        out, switches = {}, {cpu: [] for cpu in range(self.cpus)}
        for e in self.ev:  # one pass, not one per CPU
            if e.name == "cswitch":
                switches[e.cpu].append(e)
        for cpu in range(self.cpus):
            mine = switches[cpu]
            iv = []
            since, cur = self.start, (mine[0].f["old_thread_id"] if mine else None)
            for e in mine:
                if e.tsc > since:
                    iv.append((since, e.tsc, cur))
                since, cur = e.tsc, e.f["new_thread_id"]
            if self.end > since:
                iv.append((since, self.end, cur))
            out[cpu] = iv
        return out

    def cpu_use(self, runs, threads, procs):
        window = max(1, self.end - self.start)
        exact, samples = {}, {}
        per_cpu_samples = {c: {} for c in range(self.cpus)}
        for cpu, iv in runs.items():
            for a, b, tid in iv:
                if tid is not None:
                    exact[tid] = exact.get(tid, 0) + (b - a)
        for e in self.ev:
            if e.name == "profile":
                samples[e.tid] = samples.get(e.tid, 0) + 1
                per_cpu_samples[e.cpu][e.tid] = per_cpu_samples[e.cpu].get(e.tid, 0) + 1
        n_samples = sum(samples.values())
        total = window * self.cpus
        rows = []
        for tid in sorted(set(exact) | set(samples)):
            t = threads.get(tid, {})
            rows.append({"thread_id": tid, "process_id": t.get("process_id", 0) if tid else 0,
                         "name": "idle" if tid == 0 else t.get("name"),
                         "exact_cycles": exact.get(tid, 0), "exact_share": exact.get(tid, 0) / total,
                         "samples": samples.get(tid, 0),
                         "sampled_share": samples.get(tid, 0) / n_samples if n_samples else None})
        prow = {}
        for r in rows:
            if r["thread_id"] == 0:
                continue
            p = prow.setdefault(r["process_id"], {"process_id": r["process_id"],
                                                  "name": procs.get(r["process_id"], {}).get("name"),
                                                  "exact_cycles": 0, "exact_share": 0.0, "samples": 0,
                                                  "sampled_share": 0.0 if n_samples else None})
            p["exact_cycles"] += r["exact_cycles"]
            p["exact_share"] += r["exact_share"]
            p["samples"] += r["samples"]
            if n_samples:
                p["sampled_share"] += r["sampled_share"]
        idle = []
        for cpu, iv in runs.items():
            known = sum(b - a for a, b, tid in iv if tid is not None)
            idle_c = sum(b - a for a, b, tid in iv if tid == 0)
            s = per_cpu_samples[cpu]
            ns = sum(s.values())
            idle.append({"cpu": cpu, "exact_idle_share": idle_c / known if known else None,
                         "samples": ns, "sampled_idle_share": s.get(0, 0) / ns if ns else None})
        return rows, sorted(prow.values(), key=lambda p: p["process_id"]), idle

    def syscalls(self):
        pending, lat = {}, {}
        for e in self.ev:
            if e.name == "syscall-enter":
                pending[e.tid] = (e.f["number"], e.tsc)
            elif e.name == "syscall-exit":
                p = pending.pop(e.tid, None)
                if p is not None and p[0] == e.f["number"]:
                    lat.setdefault(p[0], []).append(e.tsc - p[1])
        return [{"number": n, "count": len(v), "p50": _pct(v, 50), "p99": _pct(v, 99), "max": max(v)}
                for n, v in sorted(lat.items())]

    def locks(self, top):
        by_lock, by_site = {}, {}
        for e in self.ev:
            if e.name != "spinlock":
                continue
            w = e.f["wait_cycles"] if e.f["flags"] & 1 else 0
            for table, key in ((by_lock, e.f["lock_address"]), (by_site, e.f["call_site"])):
                r = table.setdefault(key, {"events": 0, "contended": 0, "total_wait": 0, "max_wait": 0,
                                           "class_id": e.f["class_id"]})
                r["events"] += 1
                r["contended"] += 1 if e.f["flags"] & 1 else 0
                r["total_wait"] += w
                r["max_wait"] = max(r["max_wait"], w)
        rank = lambda t, k: sorted(({k: a, **r} for a, r in t.items()), key=lambda r: (-r["total_wait"], r[k]))[:top]  # noqa: E731
        return rank(by_lock, "lock_address"), rank(by_site, "call_site")

    def wakes(self):
        """Edges waker -> wakee, wake-to-run delays, and causal chains: when w's wake of t is
        followed by t running, the chain goes back through the wake that had put w on a CPU
        before w readied t, and so on (0: an interrupt, which nobody wakes)."""
        readied, edges, delays, chains = {}, {}, [], []
        wakes_of = {}  # thread -> [(switched in, waker, readied at)]
        for e in self.ev:
            if e.name == "ready":
                w, t = e.tid, e.f["readied_thread_id"]
                readied[t] = (e.tsc, w)
                edges[(w, t)] = edges.get((w, t), 0) + 1
            elif e.name == "cswitch" and e.f["new_thread_id"] in readied:
                t = e.f["new_thread_id"]
                at, w = readied.pop(t)
                delays.append(e.tsc - at)
                wakes_of.setdefault(t, []).append((e.tsc, w, at))
                chain, when = [t, w], at
                while chain[-1] != 0 and len(chain) < 16:
                    prev = [x for x in wakes_of.get(chain[-1], []) if x[0] <= when]
                    if not prev or prev[-1][1] in chain:
                        break
                    chain.append(prev[-1][1])
                    when = prev[-1][2]
                if len(chain) > 2:
                    chains.append({"at": e.tsc, "chain": list(reversed(chain))})
        return ([{"waker": w, "wakee": t, "count": n} for (w, t), n in sorted(edges.items(), key=lambda x: (-x[1], x[0]))],
                delays, chains)

    def long_waits(self, runs, long_wait, host):
        starts = {c: [a for a, _, _ in iv] for c, iv in runs.items()}
        out, placed = [], []  # placed: (row, holder CPU, a, b) of the waits whose holder CPU ran
        for e in self.ev:
            if e.name != "spinlock" or not (e.f["flags"] & 1):
                continue
            w = e.f["wait_cycles"]
            if w < long_wait and not (e.f["rules"] & 8):
                continue
            b = e.f["acquire_tsc"]
            a = b - w
            h = e.f["holder_cpu_start"] if e.f["holder_cpu_start"] != 0xFFFFFFFF else e.f["holder_cpu_end"]
            row = {"tsc": a, "cpu": e.cpu, "waiter": e.tid, "lock_address": e.f["lock_address"],
                   "class_id": e.f["class_id"], "wait_cycles": w, "holder_cpu": None if h == 0xFFFFFFFF else h,
                   "holder_thread": None, "holder_running": None, "other_thread": None, "idle": None,
                   "unknown": None, "host_off": None, "verdict": "holder unknown"}
            if h != 0xFFFFFFFF and h in runs:
                iv = runs[h]
                i = max(0, bisect.bisect_right(starts[h], a) - 1)
                holder = iv[i][2] if iv and iv[i][0] <= a < iv[i][1] else None
                share = {"holder": 0, "other": 0, "idle": 0, "unknown": 0}
                for k in range(i, len(iv)):  # from the interval holding a, until b
                    s, t, tid = iv[k]
                    if s >= b:
                        break
                    d = min(t, b) - max(s, a)
                    if d <= 0:
                        continue
                    k = "unknown" if tid is None else "idle" if tid == 0 else "holder" if tid == holder else "other"
                    share[k] += d
                covered = sum(share.values())
                share["unknown"] += max(0, w - covered)
                row.update(holder_thread=holder, holder_running=share["holder"] / w, other_thread=share["other"] / w,
                           idle=share["idle"] / w, unknown=share["unknown"] / w)
                placed.append((row, h, a, b))
            out.append(row)
        if host is not None and placed:  # one batch: the timeline's binary searches in numpy
            shares = host(np.array([p[1] for p in placed]), np.array([p[2] for p in placed], dtype=np.float64),
                          np.array([p[3] for p in placed], dtype=np.float64))
            for (row, _, _, _), v in zip(placed, shares.tolist()):
                row["host_off"] = None if v != v else v  # NaN: not placed
        for row, _, _, _ in placed:
            shares = {"running the holder": row["holder_running"], "running another thread": row["other_thread"],
                      "idle": row["idle"]}
            if row["host_off"] is not None:
                shares["off-CPU on the host"] = row["host_off"]
            row["verdict"] = max(shares, key=shares.get)
        return out


def _unions(timeline, states) -> dict:
    """vCPU -> (starts, ends, off cycles before each start): the union of its rows in these states
    as sorted disjoint host TSC intervals (overlapping rows counted once). timeline: a DataFrame
    of timeline.csv or its rows as dicts."""
    import pandas as pd
    df = timeline if isinstance(timeline, pd.DataFrame) else pd.DataFrame(list(timeline))
    if df.empty:
        return {}
    df = df[df["state"].isin(states)]
    out = {}
    for vcpu, g in df.groupby("vcpu"):
        order = np.argsort(g["start_host_tsc"].to_numpy(np.int64), kind="stable")
        s = g["start_host_tsc"].to_numpy(np.int64)[order]
        e = g["end_host_tsc"].to_numpy(np.int64)[order]
        keep = e > s
        s, e = s[keep], e[keep]
        reach = np.maximum.accumulate(e) if e.size else e
        new = np.ones(s.size, dtype=bool)  # a row starting after every earlier row ended opens a run
        new[1:] = s[1:] > reach[:-1]
        first = np.flatnonzero(new)
        us = s[first]
        ue = np.maximum.reduceat(e, first) if first.size else e
        before = np.concatenate(([0], np.cumsum(ue - us)[:-1])) if us.size else us
        out[int(vcpu)] = (us.astype(np.float64), ue.astype(np.float64), before.astype(np.float64))
    return out


def _covered(entry, t):
    """Cycles of the union (starts, ends, before) that lie before time(s) t."""
    s, e, before = entry
    i = np.searchsorted(s, t, side="right") - 1
    j = np.maximum(i, 0)
    inside = np.minimum(t, e[j]) - s[j] if s.size else np.zeros_like(np.asarray(t, dtype=np.float64))
    return np.where(i >= 0, before[j] + inside, 0.0) if s.size else inside


def host_map(cmap, guest) -> tuple:
    """lhp.ClockMap.map over an array: (host TSC, bound), the bound inf where the clock cannot
    place the time. The same arithmetic as map(), element by element."""
    g = np.asarray(guest, dtype=np.float64)
    if len(cmap.g) >= 2:
        i = np.clip(np.searchsorted(cmap.g, g, side="right"), 1, len(cmap.g) - 1)
        t = (g - cmap.g[i - 1]) / (cmap.g[i] - cmap.g[i - 1])
        off = cmap.off[i - 1] + t * (cmap.off[i] - cmap.off[i - 1])
        bound = np.maximum(cmap.hw[i - 1], cmap.hw[i]) + np.abs(cmap.off[i] - cmap.off[i - 1])
        before, after = g < cmap.g[0], g > cmap.g[-1]
        host = np.where(before, g + cmap.off[0], np.where(after, g + cmap.off[-1], g + off))
        return host, np.where(before | after, np.inf, bound)
    from .lhp import guest_to_host
    return np.asarray(guest_to_host(g, cmap.clock), dtype=np.float64), np.full(g.shape, cmap.line_bound)


def host_off_fn(timeline, clock):
    """(vcpus, guest a, guest b), arrays of one length -> per wait the share of [a, b) the vCPU
    was off or frozen on the host, through clock.json's mapping (lhp.ClockMap); NaN where the
    clock cannot place the wait, or where the host trace does not show the vCPU's state for part
    of it ('unknown'). timeline: timeline.csv as a DataFrame or as rows (dicts). Per vCPU, two
    binary searches per wait in the union of its off rows (sorted, disjoint, with cumulative
    cycles): O(waits log rows) in numpy."""
    from .lhp import ClockMap
    cmap = ClockMap(clock)
    off, unknown = _unions(timeline, OFF_STATES), _unions(timeline, (UNKNOWN_STATE,))

    def between(index, vcpu, ha, hb):
        u = index.get(vcpu)
        return np.zeros(ha.shape) if u is None else _covered(u, hb) - _covered(u, ha)

    def share(vcpus, a, b):
        vcpus = np.asarray(vcpus, dtype=np.int64)
        (ha, ea), (hb, eb) = host_map(cmap, a), host_map(cmap, b)
        out = np.full(vcpus.shape, np.nan)
        ok = np.isfinite(ea) & np.isfinite(eb) & (hb > ha)
        for v in np.unique(vcpus[ok]).tolist():
            sel = np.flatnonzero(ok & (vcpus == v))
            known = between(unknown, v, ha[sel], hb[sel]) <= 0
            sel = sel[known]
            out[sel] = between(off, v, ha[sel], hb[sel]) / (hb[sel] - ha[sel])
        return out
    return share


def replay(path: str, top: int = 10, long_wait: int = LONG_WAIT_DEFAULT, timeline=None, clock=None) -> TraceAnalysis:
    """Replays a trace (native file or CTF directory). timeline: rows of timeline.csv (dicts),
    clock: clock.json (dict); both or neither."""
    events, hz, cpus, discarded = read_trace(path)
    m = _Machine(events, hz, cpus)
    threads, procs = m.threads_and_processes()
    runs = m.run_intervals()
    tu, pu, idle = m.cpu_use(runs, threads, procs)
    top_locks, top_sites = m.locks(top)
    edges, delays, chains = m.wakes()
    host = host_off_fn(timeline, clock) if timeline is not None and clock is not None else None
    return TraceAnalysis(
        tsc_hz=hz, cpus=m.cpus, start=m.start, end=m.end, events=len(events), discarded_events=discarded,
        threads=sorted(threads.values(), key=lambda t: t["thread_id"]),
        processes=sorted(procs.values(), key=lambda p: p["process_id"]),
        cpu_use_threads=tu, cpu_use_processes=pu, cpu_idle=idle, syscalls=m.syscalls(),
        top_locks=top_locks, top_call_sites=top_sites, wake_edges=edges, wake_delays=delays,
        wake_chains=chains, long_waits=m.long_waits(runs, long_wait, host), run_intervals=runs)
