"""Read a results directory into a Run: meta, status, snapshots, timeline, clock, halts.

Only meta.json is indispensable (it names the phases and repetitions). Any other file that is
missing or malformed becomes a sentence in Run.problems, which the report prints at the top,
and the analysis goes on with what is there.
"""
import glob
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import contract as c
from . import kvm_clock, kvm_stats, lhp, parallel
from .buckets import NBUCKETS
from .names import ACQUISITIONS_COUNTED, PREEMPTOR_CLASS
from .waits import LongWaits


@dataclass
class ClassStat:
    """One lock class on one CPU in one snapshot (the kernel's per-CPU perf data)."""
    cpu: int
    lock_class: str
    acquisitions: int
    uncontended: int
    overflow: int
    wait: np.ndarray
    hold: np.ndarray
    wait_max: int | None
    long_holds: int
    lhp: dict  # lhp class -> {"count", "cycles"}
    counts: dict  # every count of the file (contract.CLASS_COUNTS and those optional ones present)


@dataclass
class Snapshot:
    phase: str
    rep: int
    duration_s: float | None
    start_guest_tsc: int | None
    end_guest_tsc: int | None
    workload: dict
    stats: list
    long_waits: list | None  # waits.LongWaits (reads as a list of dicts); None: the guest gave no list
    long_wait_threshold: int | None  # the guest listed waits of at least this many cycles
    long_waits_dropped: int
    name: str
    trace: dict | None = None  # the repetition's trace session (_trace); None: no trace
    # cpu -> {contract.PV_COUNTS name: count}: the pv lock's counters of the CPUs that have them
    pv: dict = field(default_factory=dict)
    # What the acquisitions count (contract.EVERY_ACQUISITION or CONTENDED_ONLY): contended-only
    # when any CPU says so, since its counts are in every sum over CPUs.
    acquisitions_counted: str = c.EVERY_ACQUISITION


@dataclass(frozen=True)
class Host:
    """meta.json's host: the machine the run ran on (each field None where not recorded)."""
    cpu_model: str | None
    kernel: str | None
    cpus: int | None
    tsc_hz: int | None
    hypervisor: bool | None  # the CPUID hypervisor bit: the host is itself a VM
    sched_slice_ns: int | float | None  # the host's scheduler slice: not in the table, no writer records it yet
    recorded: dict = field(repr=False)  # the object as recorded, in its order (the report's settings table lists it)


@dataclass(frozen=True)
class FreezePriority:
    """meta.json's freeze_rt_priority (preempt_rt_priority before issue 53): how the freeze
    injector was scheduled."""
    asked: int | None
    used: int | None  # None: no freeze phase started the injector
    fallback: str | None  # why the priority asked for was not had


@dataclass(frozen=True)
class Freezer:
    """One entry of meta.json's freezer: the cgroup freezer as one condition (slot) measured it."""
    slot: str  # "" when not recorded
    cgroup: str | None
    key_held: bool | None
    freeze_write_ms: float | None
    thaw_write_ms: float | None


@dataclass(frozen=True)
class NeighbourVM:
    """One VM of meta.json's neighbours.vms: the measured one or a neighbour."""
    name: str | None
    role: str | None
    vcpus: int | None
    memory_mb: int | None
    lock: str | None
    workload: str | None
    pin: list | None


@dataclass(frozen=True)
class Neighbours:
    """meta.json's neighbours: the VMs of a neighbours-N run."""
    host_cpus: list | None
    vms: list  # NeighbourVM, in order
    overcommit: dict | None


@dataclass(frozen=True)
class Meta(Mapping):
    """meta.json as the analysis reads it: the fields it uses as attributes, values as recorded
    (None where not recorded; host always a Host, freezer a list), built once from the table's
    names (from_json; an old name where the new one is missing, contract.get_renamed). Read as a
    mapping it is meta.json as recorded, every field, for a tool that indexes it by its keys."""
    run_id: str | None
    date: str | None
    git_rev: str | None
    host: Host
    qemu_version: str | None
    libvirt_version: str | None
    accelerator: str | None
    backend: str | None
    vcpus: int | None
    memory_mb: int | None
    lock: str | None
    pause: str | None
    clock: str | None
    pinning: str | None
    guest_tsc_hz: int | None
    workload: str | None
    kernel_append: str | None
    phases: list | None
    repetitions: int | None
    vm_name: str | None
    guest: str | None
    freeze_rt_priority: FreezePriority | None
    freezer: list  # Freezer, in order
    neighbours: Neighbours | None
    recorded: dict = field(repr=False)  # meta.json as read

    @classmethod
    def from_json(cls, d: dict) -> "Meta":
        K = c.K
        host = d.get(K.host) if isinstance(d.get(K.host), dict) else {}
        return cls(d.get(K.run_id), d.get(K.date), d.get(K.git_rev), _host(host), d.get(K.qemu_version),
                   d.get(K.libvirt_version), d.get(K.accelerator), d.get(K.backend), d.get(K.vcpus),
                   d.get(K.memory_mb), d.get(K.lock), d.get(K.pause), d.get(K.clock), d.get(K.pinning),
                   d.get(K.guest_tsc_hz), d.get(K.workload), d.get(K.kernel_append), d.get(K.phases),
                   d.get(K.repetitions), d.get(K.vm_name), d.get(K.guest),
                   _freeze_priority(c.get_renamed(d, K.freeze_rt_priority)),
                   [_freezer(f) for f in d.get(K.freezer) or [] if isinstance(f, dict)],
                   _neighbours(d.get(K.neighbours)), d)

    def __getitem__(self, key: str):
        return self.recorded[key]

    def __iter__(self):
        return iter(self.recorded)

    def __len__(self) -> int:
        return len(self.recorded)


def _host(h: dict) -> Host:
    K = c.K
    return Host(h.get(K.cpu_model), h.get(K.kernel), h.get(K.cpus), h.get(K.tsc_hz), h.get(K.hypervisor),
                h.get("sched_slice_ns"), h)


def _freeze_priority(p) -> FreezePriority | None:
    K = c.K
    return FreezePriority(p.get(K.asked), p.get(K.used), p.get(K.fallback)) if isinstance(p, dict) else None


def _freezer(f: dict) -> Freezer:
    K = c.K
    return Freezer(f.get(K.slot, ""), f.get(K.cgroup), f.get(K.key_held), f.get(K.freeze_write_ms),
                   f.get(K.thaw_write_ms))


def _neighbours(n) -> Neighbours | None:
    if not isinstance(n, dict):
        return None
    K = c.K
    vms = [NeighbourVM(v.get(K.name), v.get(K.role), v.get(K.vcpus), v.get(K.memory_mb), v.get(K.lock),
                       v.get(K.workload), v.get(K.pin)) for v in n.get(K.vms) or [] if isinstance(v, dict)]
    return Neighbours(n.get(K.host_cpus), vms, n.get(K.overcommit))


@dataclass
class Run:
    path: str
    run_id: str
    meta: Meta
    status: dict | None
    spec_text: str | None
    snapshots: list
    timeline: pd.DataFrame | None
    clock: dict | None
    problems: list = field(default_factory=list)
    # neighbours-N phases: each neighbour VM's repetition (snapshots/neighbours/<phase>-r<rep>-n<k>.json)
    # as {"phase", "rep", "vm" (k, from 1), "ops_per_s" (None: no throughput class counted)}
    neighbours: list = field(default_factory=list)
    # Under KVM: {(phase, rep): {"start": sample, "end": sample}} of kvm-stats/ (kvm_stats.py)
    kvm_stats: dict = field(default_factory=dict)
    # clock is what maps guest times onto the host's axis: KVM's TSC offset where the samples read
    # it and the fit allows it (kvm_clock.py), else clock.json's sampled fit. clock_fit is always
    # clock.json's fit; kvm_clock what was decided (None: no KVM statistics in the run).
    clock_fit: dict | None = None
    kvm_clock: dict | None = None
    # lhp.holder_rule: how the holders of a guest that records none were named (None: the guest's own)
    holder_rule: str | None = None
    # halts.csv (read_halts): the guest's halt spans, None where the guest records none (a Linux
    # guest, results from before it) or the file could not be read (a problem says so)
    halts: pd.DataFrame | None = None

    @property
    def phases(self) -> list:
        """Phases in the order meta.json lists them, then any others found in snapshots."""
        listed = list(self.meta.phases)
        return listed + sorted({s.phase for s in self.snapshots} - set(listed))

    def snaps(self, phase: str) -> list:
        return sorted((s for s in self.snapshots if s.phase == phase), key=lambda s: s.rep)


def _hist(obj: dict, key: str, where: str) -> np.ndarray:
    """A sparse histogram {"k": count} (absent buckets are empty) as NBUCKETS counts."""
    sparse = c.need(obj, key, dict, where)
    h = np.zeros(NBUCKETS, dtype=np.int64)
    for k, v in sparse.items():
        if not (k.isdigit() and int(k) < NBUCKETS):
            raise c.ContractError(f"{where}: '{key}' has bucket '{k}', expected 0 .. {NBUCKETS - 1}")
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise c.ContractError(f"{where}: '{key}' must hold counts (integers >= 0), got {v!r} in bucket {k}")
        h[int(k)] = v
    return h


def class_stat(cpu: int, name: str, d: dict, where: str) -> ClassStat:
    lhp = {}
    unknown = sorted(set(c.need(d, c.K.lhp, dict, where) if c.K.lhp in d else {}) - set(c.LHP_CLASSES))
    if unknown:
        raise c.ContractError(f"{where}: 'lhp' has unknown class(es) {', '.join(unknown)} "
                              f"(expected {', '.join(c.LHP_CLASSES)})")
    counts = {key: c.need_count(d, key, where) for key in c.CLASS_COUNTS}
    counts.update({key: c.need_count(d, key, where) for key in c.CLASS_OPTIONAL_COUNTS if key in d})
    for cls in c.LHP_CLASSES:
        entry = d.get(c.K.lhp, {}).get(cls, {c.K.count: 0, c.K.cycles: 0})
        lhp[cls] = {c.K.count: c.need_count(entry, c.K.count, f"{where}.lhp.{cls}"),
                    c.K.cycles: c.need_count(entry, c.K.cycles, f"{where}.lhp.{cls}")}
    return ClassStat(cpu, name, counts[c.K.acquisitions], counts[c.K.uncontended], counts[c.K.wait_overflow],
                     _hist(d, c.K.wait_hist, where), _hist(d, c.K.hold_hist, where),
                     counts.get(c.K.wait_cycles_max), counts.get(c.K.long_holds, 0), lhp, counts)


def _loss(d: dict, where: str) -> dict:
    loss = {k: c.need_count(d, k, where) for k in c.TRACE_LOSS_COUNTS}
    if loss[c.K.events_written] + loss[c.K.events_lost] != loss[c.K.events_attempted]:
        raise c.ContractError(f"{where}: events_written + events_lost != events_attempted "
                              f"({loss['events_written']} + {loss['events_lost']} != {loss['events_attempted']})")
    return loss


def _trace(d: dict, where: str) -> dict:
    """A snapshot's "trace" object: the session's parameters, what its file holds, its losses."""
    out = {k: c.need_count(d, k, where) for k in c.TRACE_COUNTS}
    out.update({k: c.need(d, k, str, where) for k in (c.K.file, c.K.enable_flags, c.K.logger_mode)})
    out[c.K.counters_found] = c.need(d, c.K.counters_found, bool, where)
    out[c.K.loss] = _loss(c.need(d, c.K.loss, dict, where), f"{where}.loss")
    out[c.K.cpus] = []
    for i, cpu in enumerate(c.need(d, c.K.cpus, list, where)):
        w = f"{where}.cpus[{i}]"
        out[c.K.cpus].append({c.K.cpu: c.need_count(cpu, c.K.cpu, w), c.K.loss: _loss(c.need(cpu, c.K.loss, dict, w), f"{w}.loss")})
    return out


def read_snapshot(path: str) -> Snapshot:
    name = os.path.join(c.SNAPSHOT_DIR, os.path.basename(path))
    d = c.read_json(path)
    stats = []
    pv = {}
    counted = c.EVERY_ACQUISITION
    for i, cpu in enumerate(c.need(d, c.K.cpus, list, name)):
        where = f"{name}: cpus[{i}]"
        cpu_no = c.need_count(cpu, c.K.cpu, where)
        if _acquisitions_counted(cpu, where) == c.CONTENDED_ONLY:
            counted = c.CONTENDED_ONLY
        if any(k in cpu for k in c.PV_COUNTS):
            pv[cpu_no] = {k: c.need_count(cpu, k, where) for k in c.PV_COUNTS}
        for cls, cd in c.need(cpu, c.K.classes, dict, where).items():
            stats.append(class_stat(cpu_no, cls, cd, f"{where}.classes['{cls}']"))
    lws = d.get(c.K.long_waits)
    if lws is not None:
        lws = LongWaits.from_json(c.need(d, c.K.long_waits, list, name), f"{name}: long_waits")
    tsc = lambda key: d.get(key, {}).get(c.K.guest_tsc) if isinstance(d.get(key), dict) else None
    dur = d.get(c.K.duration_s)
    return Snapshot(c.need(d, c.K.phase, str, name), c.need(d, c.K.rep, int, name),
                    float(dur) if isinstance(dur, (int, float)) and dur > 0 else None, tsc(c.K.start), tsc(c.K.end),
                    d.get(c.K.workload) if isinstance(d.get(c.K.workload), dict) else {}, stats, lws,
                    c.get_renamed(d, c.K.long_wait_threshold), d.get(c.K.long_waits_dropped, 0) or 0, name,
                    _trace(c.need(d, c.K.trace, dict, name), f"{name}: trace") if c.K.trace in d else None, pv,
                    counted)


def _acquisitions_counted(cpu: dict, where: str) -> str:
    """A CPU's contract.ACQUISITIONS_COUNTED_KEY, one of the ABI's names; absent (older results):
    every acquisition."""
    v = cpu.get(c.ACQUISITIONS_COUNTED_KEY, c.EVERY_ACQUISITION)
    if v not in ACQUISITIONS_COUNTED.names:
        raise c.ContractError(f"{where}: {c.ACQUISITIONS_COUNTED_KEY} is {v!r}, not one of "
                              f"{', '.join(ACQUISITIONS_COUNTED.names)}")
    return v


def read_timeline(path: str) -> pd.DataFrame:
    try:
        # the preemptor's text columns are empty on `on` rows: read as text, not guessed per chunk
        df = pd.read_csv(path, dtype={c.K.phase: str, c.K.state: str, c.K.preemptor: str, c.K.preemptor_vm: str,
                                      c.K.preemptor_comm: str})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise c.ContractError(f"{c.TIMELINE}: cannot parse: {e}") from e
    missing = [col for col in c.TIMELINE_COLUMNS if col not in df.columns]
    if missing:
        raise c.ContractError(f"{c.TIMELINE}: missing column(s) {', '.join(missing)}")
    for col in (c.K.vcpu, c.K.start_host_tsc, c.K.end_host_tsc, c.K.rep):
        if not pd.api.types.is_integer_dtype(df[col]):
            raise c.ContractError(f"{c.TIMELINE}: column '{col}' must hold integers")
    bad = sorted(set(df[c.K.state]) - set(c.TIMELINE_STATES))
    if bad:
        raise c.ContractError(f"{c.TIMELINE}: unknown state(s) {', '.join(map(str, bad))} (expected {', '.join(c.TIMELINE_STATES)})")
    if c.K.preemptor in df.columns:  # spinlab-load timeline's class of who took the CPU (preemptors.py)
        given = df[c.K.preemptor].dropna().astype(str)
        bad = sorted(set(given) - set(PREEMPTOR_CLASS.names))
        if bad:
            raise c.ContractError(f"{c.TIMELINE}: unknown preemptor class(es) {', '.join(bad)} "
                                  f"(expected {', '.join(PREEMPTOR_CLASS.names)})")
    if (df[c.K.end_host_tsc] < df[c.K.start_host_tsc]).any():
        row = int((df[c.K.end_host_tsc] < df[c.K.start_host_tsc]).to_numpy().argmax()) + 2
        raise c.ContractError(f"{c.TIMELINE}: line {row}: end_host_tsc is before start_host_tsc")
    return df


def read_halts(path: str) -> pd.DataFrame:
    """halts.csv, checked (the runner checked what the guest wrote; this file may have been edited
    since): columns cpu, enter_tsc, exit_tsc (inf where empty: to the end of the record) and
    kind, one of HALT_KIND's names, each row's exit at or after its enter."""
    where = c.HALTS
    try:
        df = pd.read_csv(path, dtype={c.K.kind: str})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise c.ContractError(f"{where}: cannot parse: {e}") from e
    missing = [col for col in c.HALTS_COLUMNS if col not in df.columns]
    if missing:
        raise c.ContractError(f"{where}: missing column(s) {', '.join(missing)}")
    for col in (c.K.cpu, c.K.enter_tsc):
        if not pd.api.types.is_integer_dtype(df[col]) or (df[col] < 0).any():
            raise c.ContractError(f"{where}: column '{col}' must hold integers >= 0")
    exit_ = pd.to_numeric(df[c.K.exit_tsc], errors="coerce")
    bad = exit_.isna() & df[c.K.exit_tsc].notna()
    if bad.any():
        line = int(bad.to_numpy().argmax()) + 2
        raise c.ContractError(f"{where}: line {line}: exit_tsc {df[c.K.exit_tsc].iloc[line - 2]!r} is not a number")
    kinds = df[c.K.kind].fillna("")
    unknown = sorted(set(kinds) - set(c.HALT_KIND.names))
    if unknown:
        raise c.ContractError(f"{where}: unknown kind(s) {', '.join(map(repr, unknown))} (expected {', '.join(c.HALT_KIND.names)})")
    enter = df[c.K.enter_tsc].to_numpy(dtype=np.float64)
    exit_ = exit_.fillna(np.inf).to_numpy(dtype=np.float64)
    if (exit_ < enter).any():
        line = int((exit_ < enter).argmax()) + 2
        raise c.ContractError(f"{where}: line {line}: exit_tsc is before enter_tsc")
    return pd.DataFrame({c.K.cpu: df[c.K.cpu].to_numpy(dtype=np.int64), c.K.enter_tsc: enter,
                         c.K.exit_tsc: exit_, c.K.kind: kinds.to_numpy(dtype=object)})


PARALLEL_BYTES = 32 << 20  # snapshot files from which they are read side by side (parallel.py)


def _read_or_problem(f: str) -> tuple:
    """(the snapshot, None), or (None, what is wrong with it)."""
    try:
        return read_snapshot(f), None
    except c.ContractError as e:
        return None, str(e)


def _optional(run: Run, what: str, reader):
    """Call reader(); a ContractError becomes a problem of the run and the result None."""
    try:
        return reader()
    except c.ContractError as e:
        run.problems.append(f"{e} — {what}")
        return None


def load_run(path: str) -> Run:
    if not os.path.isdir(path):
        raise c.ContractError(f"{path}: no such results directory" if not os.path.exists(path) else f"{path}: not a directory")
    recorded = c.read_json(os.path.join(path, c.META))
    phases = c.need(recorded, c.K.phases, list, c.META)
    if not phases or not all(isinstance(p, str) and p for p in phases):
        raise c.ContractError(f"{c.META}: field 'phases' must be a non-empty list of names")
    reps = c.need(recorded, c.K.repetitions, int, c.META)
    if reps < 1:
        raise c.ContractError(f"{c.META}: field 'repetitions' must be >= 1, got {reps}")
    meta = Meta.from_json(recorded)
    run = Run(path, str(meta.run_id or os.path.basename(os.path.abspath(path))), meta, None, None, [], None, None)
    run.status = _optional(run, "whether the run completed is unknown",
                           lambda: c.read_json(os.path.join(path, c.STATUS)))
    if run.status is not None and run.status.get(c.K.state) not in c.RUN_STATE.names:
        run.problems.append(f"{c.STATUS}: {c.K.state} {run.status.get(c.K.state)!r} is not one of "
                            f"{', '.join(c.RUN_STATE.names)}")
    spec = os.path.join(path, c.SPEC)
    run.spec_text = open(spec, encoding="utf-8", errors="replace").read() if os.path.exists(spec) else None
    files = sorted(glob.glob(os.path.join(path, c.SNAPSHOT_DIR, "*.json")))
    big = sum(os.path.getsize(f) for f in files) >= PARALLEL_BYTES
    for f, (snap, problem) in zip(files, parallel.forked_map(_read_or_problem, files, big=big)):
        if snap is None:
            run.problems.append(f"{problem} — this snapshot is left out")
            continue
        m = re.fullmatch(r"(.+)-r(\d+)\.json", os.path.basename(f))
        if not m or (m.group(1), int(m.group(2))) != (snap.phase, snap.rep):
            run.problems.append(f"{snap.name}: holds phase {snap.phase!r} rep {snap.rep}, which does not match "
                                f"its file name (expected {c.snapshot_name(snap.phase, snap.rep)}); used as {snap.phase} r{snap.rep}")
        run.snapshots.append(snap)
    for f in sorted(glob.glob(os.path.join(path, c.SNAPSHOT_DIR, c.K.neighbours, "*.json"))):
        m = re.fullmatch(r"(.+)-r(\d+)-n(\d+)\.json", os.path.basename(f))
        try:
            snap = read_snapshot(f)
        except (c.ContractError, ValueError, OSError) as e:
            run.problems.append(f"{e} — this neighbour's counters are left out")
            continue
        if not m:
            run.problems.append(f"{f}: not a neighbour snapshot name (<phase>-r<rep>-n<k>.json) — left out")
            continue
        ops = [w.get(c.K.ops_per_s) for w in snap.workload.values() if isinstance(w, dict)]
        run.neighbours.append({c.K.phase: m.group(1), c.K.rep: int(m.group(2)), "vm": int(m.group(3)),
                               c.K.ops_per_s: float(ops[0]) if ops and ops[0] is not None else None})
    # A Linux guest records no holder: at 2 vCPUs a rule names it (lhp.holder_rule), said in the report.
    run.holder_rule = lhp.holder_rule(meta)
    for snap in run.snapshots:
        if snap.long_waits is not None:
            lhp.apply_holder_rule(snap.long_waits, run.holder_rule, meta.vcpus)
    run.kvm_stats = kvm_stats.read_dir(path, run.problems)
    tl = os.path.join(path, c.TIMELINE)
    if os.path.exists(tl):
        run.timeline = _optional(run, "the host timeline is not used", lambda: read_timeline(tl))
    halts = os.path.join(path, c.HALTS)
    if os.path.exists(halts):
        run.halts = _optional(run, "a vCPU thread asleep is not told halted from blocked",
                              lambda: read_halts(halts))
    run.clock = _optional(run, "guest and host times cannot be joined",
                          lambda: _read_clock(os.path.join(path, c.CLOCK)))
    run.clock_fit = run.clock
    kvm, run.kvm_clock = kvm_clock.decide(run.kvm_stats, run.clock_fit)
    if kvm is not None:
        run.clock = kvm
    return run


def _read_clock(path: str) -> dict | None:
    d = c.read_json(path, required=False)
    if d is None:
        return None
    points = d.get(c.K.points, [])
    if not isinstance(points, list) or any(
            not isinstance(p, list) or len(p) != 3 or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                              for x in p) for p in points):
        raise c.ContractError(f"{c.CLOCK}: field 'points' must be a list of [guest_tsc, offset, half_width]")
    bound = d.get(c.K.bound_max_cycles)
    return {c.K.offset_cycles: c.need(d, c.K.offset_cycles, int, c.CLOCK),
            c.K.drift_ppm: float(c.need(d, c.K.drift_ppm, (int, float), c.CLOCK)),
            c.K.ref_guest_tsc: d.get(c.K.ref_guest_tsc, 0) if isinstance(d.get(c.K.ref_guest_tsc), int) else 0,
            c.K.samples: d.get(c.K.samples), c.K.residual_cycles: d.get(c.K.residual_cycles),
            c.K.method: d.get(c.K.method), c.K.points: sorted(points),
            c.K.bound_max_cycles: bound if isinstance(bound, (int, float)) else None,
            c.K.bound_median_cycles: d.get(c.K.bound_median_cycles),
            c.K.noise_floor_cycles: float(d.get(c.K.noise_floor_cycles) or 0.0),
            c.K.reference: _read_reference(d.get(c.K.reference))}


def _read_reference(r) -> dict | None:
    """clock.json's reference (the guest's reference clock, collector/clock_reference.h), checked;
    None in results from before it."""
    if r is None:
        return None
    where = f"{c.CLOCK} reference"
    if not isinstance(r, dict):
        raise c.ContractError(f"{where}: expected an object, got {r!r}")
    out = {c.K.source: c.need(r, c.K.source, str, where)}
    for k in (c.K.readings, c.K.placed, c.K.calibrated_from):
        out[k] = c.need_count(r, k, where)
    bound = r.get(c.K.calibration_bound_ns)
    if bound is not None and (not isinstance(bound, (int, float)) or isinstance(bound, bool) or bound < 0):
        raise c.ContractError(f"{where}: {c.K.calibration_bound_ns} must be a number of ns or null, got {bound!r}")
    out[c.K.calibration_bound_ns] = bound
    out[c.K.why_not] = r.get(c.K.why_not) or ""
    return out
