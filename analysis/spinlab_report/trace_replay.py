"""Replaying a spinlab trace through a state machine (seed 004): who ran where, for how long, who
woke whom, and what the holder's CPU did during each long spinlock wait.

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
- top locks by total wait, top call sites (the acquire site; call stacks do not exist yet);
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

from .contract import OFF_STATES, UNKNOWN_STATE

LONG_WAIT_DEFAULT = 1 << 20  # cycles; the runner's long_waits_min_cycles


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


def read_ctf(path: str) -> tuple:
    """(events sorted by time, tsc_hz, cpu count, discarded events) of a CTF export."""
    import bt2
    events, discarded, hz, cpus = [], 0, None, 0
    for m in bt2.TraceCollectionMessageIterator(path):
        if type(m) is bt2._EventMessageConst:
            e = m.event
            if hz is None:
                env = e.packet.stream.trace.environment
                hz, cpus = int(env["tsc_hz"]), int(env["cpu_count"])
            ctx = e.common_context_field
            f = {}
            for k, v in e.payload_field.items():
                f[k] = str(v) if isinstance(v, bt2._StringFieldConst) else (
                    [int(x) for x in v] if isinstance(v, bt2._ArrayFieldConst) else int(v))
            events.append(Event(m.default_clock_snapshot.value, int(e.packet.context_field["cpu_id"]),
                                e.name, int(ctx["thread_id"]), int(ctx["process_id"]), f))
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
        if r.returncode not in (0, 1):  # 1: damage named on stderr, the rest exported
            raise ValueError(f"{path}: {r.stderr.strip()}")
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
        out = {}
        for cpu in range(self.cpus):
            mine = [e for e in self.ev if e.cpu == cpu and e.name == "cswitch"]
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
        out = []
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
                for s, t, tid in iv[i:]:
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
                if host is not None:
                    row["host_off"] = host(h, a, b)
                shares = {"running the holder": row["holder_running"], "running another thread": row["other_thread"],
                          "idle": row["idle"]}
                if row["host_off"] is not None:
                    shares["off-CPU on the host"] = row["host_off"]
                row["verdict"] = max(shares, key=shares.get)
            out.append(row)
        return out


def host_off_fn(timeline_rows, clock):
    """(vcpu, guest a, guest b) -> share of [a, b) the vCPU was off or frozen on the host, through
    clock.json's mapping (lhp.ClockMap); None where the clock cannot place the wait, or where the
    host trace does not show the vCPU's state for part of it ('unknown')."""
    from .lhp import ClockMap
    cmap = ClockMap(clock)
    off, unknown = {}, {}
    for r in timeline_rows:
        into = off if r["state"] in OFF_STATES else unknown if r["state"] == UNKNOWN_STATE else None
        if into is not None:
            into.setdefault(int(r["vcpu"]), []).append((int(r["start_host_tsc"]), int(r["end_host_tsc"])))

    def share(vcpu, a, b):
        ha, ea = cmap.map(a)
        hb, eb = cmap.map(b)
        if not np.isfinite(ea) or not np.isfinite(eb) or hb <= ha:
            return None
        if any(min(t, hb) > max(s, ha) for s, t in unknown.get(vcpu, [])):
            return None
        cut = sum(max(0, min(t, hb) - max(s, ha)) for s, t in off.get(vcpu, []))
        return cut / (hb - ha)
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
