"""The verdict that opens the report: how much vCPU time went to lock-holder preemption? (pure)

The headline, per phase, each figure as its mean with a Student t interval across repetitions
(confidence.mean_ci) and, against the baseline phase, the ratio of geometric means with Welch's
t interval and two-sided test on log values (confidence.log_ratio; why that test: its docstring):

1. LHP spin. The long waits (>= the threshold) whose holder side is off the host CPU
   (the run's Attribution, attribution.py: holder_side 'off', from the guest's steal time or the host timeline),
   per repetition: the cycles spent in them divided by vCPUs x duration (cycles per
   vCPU-second; over the guest TSC span also a share of vCPU time), and their number per second.
   Only the cycles of listed waits inside the repetition count (the trace session that lists
   them runs before and after the counters), and per waiter vCPU the union of its waits' spans:
   a ring-3 wait that a kernel wait interrupts on the same vCPU would otherwise count that time
   twice (on nested KVM here the plain sum was 6-28 points of vCPU time higher).
   Waits whose holder side is uncertain or unknown are left out and counted. A repetition
   without a long-wait list, or none of whose long waits could be attributed, has no value
   (never a zero).
2. Kernel-lock spin. The wait cycles of every contended acquisition of a kernel lock class over
   vCPUs x the repetition's guest TSC span: the figure Friebel et al. reported for Xen (0.2%
   alone, 7.6% beside a CPU hog). Kernel classes are all but the ring-3 workload classes
   (WORKLOAD_CLASS_PREFIXES: the kernel names ids 16..31, which ring 3 takes, "userN"). The
   snapshot's wait_cycles_sum is exact; a class without it has only its log2 histogram, and
   its cycles are then a range from the bucket edges (bucket k: [2^k, 2^(k+1)), bucket 0:
   [0, 2)) with the log-uniform mean 2^k / ln 2 (the report's CDF assumption) as the estimate
   that the interval and the test use. Overflowed (untimed) waits have no length: counted apart.
   The counters take a wait whole when it ends, so for the listed long kernel-lock waits the
   cycles outside the repetition are taken off and those inside it of waits that ended after it
   added (waits shorter than the threshold straddle an edge by less than the threshold each).
3. Causes of the long waits, pooled over repetitions: holder preempted, waiter preempted, both,
   holder running (class 'neither'), uncertain, unknown. A holder-running wait is a slow holder
   when one hold lasted at least the threshold during the wait: a placed hold of its hand-over
   chain ("holds": [[cpu, from_tsc], ...]), or, without a chain, the one hold of a holder that
   never changed (it covered the whole wait; a release and re-acquisition by the same CPU cannot
   be seen then). Otherwise it queued behind other holders: the holder changed and no placed
   hold was that long (hand-overs the chain could not place count as queued). The hold
   histograms' timed holds >= the threshold are given beside it.

Secondary (never the headline): waits >= 2^20 cycles per second and per million acquisitions,
from the wait histograms (exact: 2^20 is a bucket edge), and the throughput change. Counts get
0.5 added before the log (a repetition with none would have log 0 = -inf), LHP cycles half a
threshold's worth (the same half wait); means and intervals use the raw values. The kernel
share gets nothing added: a side with no kernel-lock spinning at all is not tested.

Warnings: the baseline was not idle (its vCPUs off the host CPU more than BASELINE_OFF_MAX of
the covered time, from the host timeline), or its idleness is unknown (no timeline); the host is
itself a VM (meta.json host.hypervisor: the CPUID hypervisor bit), so the run is nested.
"""
import math

import numpy as np

from . import attribution, freeze_lengths, lhp, lhp_share
from .buckets import LONG_K  # waits >= 2^20 cycles, whatever the LHP threshold: the secondary row
from .confidence import Change, Rate, estimate
from .contract import OFF_STATES, UNKNOWN_STATE
from .names import LHP_CLASS as L
from .verdict_text import cycles_text, details, g3, headlines, paragraph, significant, table  # noqa: F401 (the verdict's text)

CORRECTION = 0.5
BASELINE_OFF_MAX = 0.05  # a baseline whose vCPUs were off the host CPU longer was not idle
WORKLOAD_CLASS_PREFIXES = ("user", "lockbench")  # ring-3 locks (lockbench: the test data's name)
# Every class a long wait may have (lhp.CLASSES), in the order the verdict lists them.
CAUSES = (L.kHolderPreempted, L.kWaiterPreempted, L.kBoth, L.kNeither, lhp.HOLDER_BLOCKED, lhp.POSSIBLY_PREEMPTED,
          lhp.UNCERTAIN, L.kUnknown)
RUNNING_KINDS = ("slow_holder", "queued", "holder_not_known")


# Per repetition ------------------------------------------------------------------------------

def is_kernel_class(name: str) -> bool:
    return not name.startswith(WORKLOAD_CLASS_PREFIXES)


def hist_cycles(h) -> tuple[float, float, float]:
    """(least, most, log-uniform estimate) of the summed cycles of a log2 wait histogram."""
    lo = hi = est = 0.0
    for k in np.nonzero(h)[0]:
        n = float(h[k])
        lo += n * (0.0 if k == 0 else 2.0 ** k)
        hi += n * 2.0 ** (k + 1)
        est += n * (1.0 if k == 0 else 2.0 ** k / math.log(2))
    return lo, hi, est


def kernel_spin_cycles(snap, waits) -> dict:
    """The snapshot's wait cycles on kernel lock classes: least, most, estimate, exact or not.
    The counters take each wait whole when it ends; for the listed long waits (window_waits'
    result, a Window or None) the cycles outside the repetition are taken off and those
    inside it of waits that ended after it are added (edge_cycles: the net change)."""
    edge = 0
    if waits:
        kernel = np.array([is_kernel_class(n) for n in waits.class_names], dtype=bool)[waits.lock_code]
        if kernel.any():
            edge = float(np.sum(waits.inside[kernel] - np.where(waits.ended_inside[kernel], waits.wait_cycles[kernel], 0)))
    out = {"lo": edge, "hi": edge, "est": edge, "exact": True, "overflow": 0, "classes": set(), "edge": edge}
    for st in snap.stats:
        if not is_kernel_class(st.lock_class):
            continue
        out["classes"].add(st.lock_class)
        out["overflow"] += st.overflow
        exact = st.counts.get("wait_cycles_sum")
        if exact is not None:
            lo = hi = est = float(exact)
        else:
            lo, hi, est = hist_cycles(st.wait)
            out["exact"] = False
        out["lo"], out["hi"], out["est"] = out["lo"] + lo, out["hi"] + hi, out["est"] + est
    return out


def vcpu_count(run, snap) -> int | None:
    n = run.meta.vcpus
    if isinstance(n, int) and not isinstance(n, bool) and n > 0:
        return n
    cpus = {st.cpu for st in snap.stats}
    return max(cpus) + 1 if cpus else None


def tsc_span(run, snap) -> float | None:
    """The repetition's guest TSC cycles: end - start, else duration_s x guest_tsc_hz."""
    if snap.start_guest_tsc is not None and snap.end_guest_tsc is not None and snap.end_guest_tsc > snap.start_guest_tsc:
        return float(snap.end_guest_tsc - snap.start_guest_tsc)
    hz = run.meta.guest_tsc_hz
    return float(snap.duration_s * hz) if snap.duration_s and isinstance(hz, (int, float)) and hz > 0 else None


def spun_cycles(waits, snap) -> float:
    """The cycles inside the repetition during which the waiters' vCPUs were in one of these
    waits (a Window): per waiter CPU the union of the waits' clipped spans, so that waits
    which overlap on one vCPU (a ring-3 wait interrupted by a kernel wait) count their common
    time once. Sorted by CPU and start, each span adds what reaches past every earlier span's end."""
    if not len(waits):
        return 0.0
    lo, hi = waits.start_tsc, waits.start_tsc + waits.wait_cycles
    if snap.start_guest_tsc is not None:
        lo = np.maximum(lo, snap.start_guest_tsc)
    if snap.end_guest_tsc is not None:
        hi = np.minimum(hi, snap.end_guest_tsc)
    order = np.lexsort((hi, lo, waits.cpu))
    cpu, lo, hi = waits.cpu[order], lo[order], hi[order]
    starts = np.flatnonzero(np.concatenate(([True], cpu[1:] != cpu[:-1])))
    reach = lo.copy()  # the latest end of the CPU's earlier spans (its first span: its own start)
    for s, e in zip(starts.tolist(), np.append(starts[1:], cpu.size).tolist()):
        reach[s + 1:e] = np.maximum.accumulate(hi[s:e])[:-1]
    return float(np.sum(np.maximum(0, hi - np.maximum(lo, reach))))


class Window:
    """Some attributed long waits of one snapshot (window_waits: those that spun during the
    repetition) as the verdict reads them: columns, and row(k) for a wait's dict."""

    def __init__(self, att: lhp.Attributed, keep, inside):
        self.att, self.keep, self.inside = att, keep, inside  # inside: cycles inside the repetition
        pos = att.pos[keep]
        lw = att.lw
        self.cpu, self.start_tsc, self.wait_cycles = lw.cpu[pos], lw.start[pos], lw.wait[pos]
        self.holder_cpu, self.holder_end_cpu = lw.holder[pos], lw.holder_end[pos]
        self.lock_code, self.class_names = lw.lock_class[pos], lw.class_names
        self.has_holds = lw.holds_at[pos + 1] > lw.holds_at[pos]
        self.holder_by_rule = lw.holder_by_rule[pos]
        self.cause = att.cause()[keep]
        self.holder_side = np.array(lhp.SIDES, dtype=object)[att.side["holder"][keep]]
        self.ended_inside = att.in_repetition[keep]

    def __len__(self) -> int:
        return int(self.keep.size)

    def __bool__(self) -> bool:
        return len(self) > 0

    def row(self, k: int) -> dict:
        return self.att.row(int(self.keep[k]))

    def __iter__(self):
        return (self.row(k) for k in range(len(self)))

    def where(self, mask):
        """The waits of this window where mask holds."""
        mask = np.asarray(mask, dtype=bool)
        return Window(self.att, self.keep[mask], self.inside[mask])


def window(att, start_guest_tsc, end_guest_tsc) -> Window:
    """The waits with cycles inside [start, end) of the repetition (their cycles there, as
    a wait may begin before it or end after it, in .inside); every wait when the span is not known."""
    start, wait = att.start_tsc(), att.wait_cycles()
    if start_guest_tsc is None or end_guest_tsc is None:
        inside = wait.astype(np.float64)
    else:
        inside = np.maximum(0, np.minimum(start + wait, end_guest_tsc) - np.maximum(start, start_guest_tsc)).astype(np.float64)
    keep = np.flatnonzero(inside > 0)
    return Window(att, keep, inside[keep])


def window_waits(attributed, snap) -> list | None:
    """The snapshot's long waits that spun during the repetition (the trace session that lists
    them runs before and after the counters), from its attributed waits (lhp.Attributed; None
    without a list: then None)."""
    if attributed is None:
        return None
    return window(attributed, snap.start_guest_tsc, snap.end_guest_tsc)


def rep_values(run, snap, threshold: int) -> dict:
    """rep_of for a tool with one repetition alone (the sweep's rep_verdict): its long waits are
    attributed here. The verdict reads the run's Attribution instead (judge)."""
    tables = attribution.long_waits_share([snap], run.timeline, run.clock, threshold, run.halts)["waits"].tables
    return rep_of(run, snap, tables[0] if tables else None, threshold)


def rep_of(run, snap, attributed, threshold: int) -> dict:
    """Everything the verdict needs from one repetition; attributed: its attributed long waits
    (Attribution.of)."""
    waits = window_waits(attributed, snap)
    # No list, or long waits none of which could be attributed (say no timeline covers this
    # repetition and steal time saw nothing): the repetition's LHP figures are unknown, not 0.
    unplaced = waits is None or bool(waits) and bool(np.all(waits.cause == L.kUnknown))
    # A rule that names only possible holders (a Linux guest at more than 2 vCPUs) bounds the spin
    # behind a preempted holder from above (those waits and the surely preempted ones) and leaves
    # the figure itself unknown.
    possible = not unplaced and bool(np.any(waits.holder_side == "possibly_off"))
    off = None if unplaced or possible else waits.where(waits.holder_side == "off")
    at_most = waits.where(np.isin(waits.holder_side, ("off", "possibly_off"))) if possible else None
    vcpus, span = vcpu_count(run, snap), tsc_span(run, snap)
    long_waits = sum(int(st.wait[LONG_K:].sum()) for st in snap.stats)
    return {"rep": snap.rep, "duration_s": snap.duration_s, "long_waits": long_waits, "long_waits_e6": long_waits * 1e6,
            "acquisitions": sum(st.acquisitions for st in snap.stats),
            "vcpu_seconds": vcpus * snap.duration_s if vcpus and snap.duration_s else None,
            "vcpu_cycles": vcpus * span if vcpus and span else None,
            "holder_off_waits": None if off is None else len(off),
            "holder_off_cycles": None if off is None else spun_cycles(off, snap),
            "possibly_off_cycles": None if at_most is None else spun_cycles(at_most, snap),
            "kernel_spin": kernel_spin_cycles(snap, waits), "waits": waits or [],
            "holds_ge_threshold": sum(timed_holds_at_least(st.hold, threshold) for st in snap.stats)}


def timed_holds_at_least(h, threshold: int) -> int:
    """Timed holds in buckets whose every value is >= threshold (a lower bound when the
    threshold is not a power of two)."""
    k = max(int(threshold - 1).bit_length(), 0)  # the first bucket starting at >= threshold
    return int(np.asarray(h)[k:].sum())


# Rates across repetitions: what each figure divides (confidence.Rate), estimated in one pass ------

def _parts(reps, num: str, den: str) -> list | None:
    """(reps[i][num], reps[i][den]) per repetition; None when reps is None (no baseline)."""
    return None if reps is None else [(r[num], r[den]) for r in reps]


def _rate(reps, base_reps, num: str, den: str, correction: float) -> Rate:
    return Rate(_parts(reps, num, den), _parts(base_reps, num, den), correction)


def lhp_spin(reps, base_reps, threshold: int) -> dict:
    """Headline 1: cycles spun behind a preempted holder per vCPU-second, the same as a share of
    vCPU time, and holder-preempted long waits per second."""
    half_wait = CORRECTION * threshold
    bounded = any(r["possibly_off_cycles"] is not None for r in reps)
    return {"cycles_per_vcpu_second": _rate(reps, base_reps, "holder_off_cycles", "vcpu_seconds", half_wait),
            # at most: the spin behind a possibly preempted holder or a preempted one (null: no bound)
            "at_most_cycles_per_vcpu_second": (_rate(reps, base_reps, "possibly_off_cycles", "vcpu_seconds", half_wait)
                                               if bounded else None),
            "share_of_vcpu_time": _rate(reps, base_reps, "holder_off_cycles", "vcpu_cycles", half_wait),
            "waits_per_second": _rate(reps, base_reps, "holder_off_waits", "duration_s", CORRECTION),
            "repetitions_attributed": sum(r["holder_off_waits"] is not None for r in reps)}


def kernel_spin(reps, base_reps) -> dict:
    """Headline 2: the share of vCPU time spent spinning on kernel locks, with its bucket-edge
    range where only histograms exist."""
    def parts(rs, key):
        return [(r["kernel_spin"][key], r["vcpu_cycles"]) for r in rs]
    out = {"share": Rate(parts(reps, "est"), None if base_reps is None else parts(base_reps, "est"), 0.0)}
    for key in ("lo", "hi"):
        vals = [n / d for n, d in parts(reps, key) if d]
        out[key] = float(np.mean(vals)) if vals else None
    out["exact"] = all(r["kernel_spin"]["exact"] for r in reps)
    out["overflow"] = sum(r["kernel_spin"]["overflow"] for r in reps)
    out["edge_cycles"] = sum(r["kernel_spin"]["edge"] for r in reps)
    out["classes"] = sorted(set().union(*(r["kernel_spin"]["classes"] for r in reps)))
    return out


# Causes --------------------------------------------------------------------------------------

def holders(w: dict) -> list | None:
    """The holders of a wait without a hand-over chain: its holder at the start and at the end."""
    h0, h1 = w.get("holder_cpu"), w.get("holder_end_cpu")
    if h0 is None and h1 is None:
        return None
    return [h0 if h0 is not None else h1] if h0 is None or h1 is None or h0 == h1 else [h0, h1]


def hold_lengths(w: dict) -> list | None:
    """The cycles each holder of the wait's hand-over chain ("holds": [[cpu, from_tsc], ...], the
    first holding when the wait began) held the lock during the wait, None for a hold whose
    start or end hand-over was not placed (from_tsc null); None without a chain."""
    chain = w.get("holds")
    if not chain:
        return None
    start, end = w["start_tsc"], w["start_tsc"] + w["wait_cycles"]
    at = [start] + [None if t is None else min(max(t, start), end) for _, t in chain[1:]] + [end]
    return [None if a is None or b is None else b - a for a, b in zip(at[:-1], at[1:])]


def running_kind(w: dict, threshold: int) -> str:
    """Why a wait behind a running holder was long: a slow holder (a hold of at least the
    threshold during the wait) or a queue of holders (the holder changed, no such hold)."""
    lengths = hold_lengths(w)
    if lengths is not None:
        return "slow_holder" if any(x is not None and x >= threshold for x in lengths) else "queued"
    hs = holders(w)
    if hs is None:
        return "holder_not_known"
    return "slow_holder" if len(set(hs)) == 1 else "queued"


def causes(reps, threshold: int) -> dict:
    out = {c: 0 for c in CAUSES} | {k: 0 for k in RUNNING_KINDS}
    out["long_waits"] = out["hand_overs_placed"] = 0
    for r in reps:
        w = r["waits"]  # a Window, or [] without one
        if not len(w):
            continue
        listed = np.isin(w.cause, CAUSES)
        for cls in CAUSES:
            out[cls] += int(np.count_nonzero(w.cause == cls))
        out[L.kUnknown] += int(np.count_nonzero(~listed))
        out["long_waits"] += len(w)
        out["hand_overs_placed"] += int(np.count_nonzero(w.has_holds))
        running = w.cause == L.kNeither
        for k in np.flatnonzero(running & w.has_holds).tolist():  # a hand-over chain: its hold lengths
            out[running_kind(w.row(k), threshold)] += 1
        plain = running & ~w.has_holds
        h0, h1 = w.holder_cpu[plain], w.holder_end_cpu[plain]
        # running_kind without a chain: holders at start and end; a holder named by rule says
        # nothing of its holds (a Linux guest's: which of them covered the wait is not seen)
        unknown = ((h0 < 0) & (h1 < 0)) | w.holder_by_rule[plain]
        one = ~unknown & ((h0 < 0) | (h1 < 0) | (h0 == h1))
        out["holder_not_known"] += int(np.count_nonzero(unknown))
        out["slow_holder"] += int(np.count_nonzero(one))
        out["queued"] += int(np.count_nonzero(~unknown & ~one))
    out["holds_ge_threshold"] = sum(r["holds_ge_threshold"] for r in reps)
    return out


# Secondary and context -----------------------------------------------------------------------

def lhp_counts(reps) -> dict:
    """Long waits inside the repetitions by their holder's side: off (preempted), on (running),
    uncertain, unknown, blocked (off only while blocked), possibly off (a rule's possible holder);
    and the share of preempted holders among the decided ones."""
    sides = np.concatenate([r["waits"].holder_side for r in reps if len(r["waits"])] or [np.zeros(0, dtype=object)])
    off, on, unsure, blocked, possible = (int(np.count_nonzero(sides == x))
                                          for x in ("off", "on", "uncertain", "blocked", "possibly_off"))
    return {"long_waits": len(sides), "holder_off": off, "holder_on": on, "uncertain": unsure,
            "unknown": len(sides) - off - on - unsure - blocked - possible,
            "holder_blocked": blocked, "possibly_preempted": possible,
            "share": off / (off + on) if off + on else None}


def throughput_change(tp: dict | None, base_tp: dict | None, is_base: bool) -> Change | None:
    """The throughput's change from the baseline's (summary.json's throughput), None where either
    has no values or a value <= 0."""
    if is_base or not tp or not base_tp or not tp.get("values") or not base_tp.get("values"):
        return None
    if min(tp["values"]) <= 0 or min(base_tp["values"]) <= 0:
        return None
    return Change(tp["values"], base_tp["values"])


def off_share(timeline, phase: str, states: tuple = OFF_STATES) -> float | None:
    """Share of the covered time the phase's vCPUs were off the host CPU (off or frozen), over all
    vCPUs and repetitions: what "idle host" really meant. Time whose state the host trace does
    not show ('unknown') is left out of both. None without a timeline for the phase. states
    narrows what counts as off: ("off",) leaves out a freeze phase's own frozen time, so that
    what remains is the time other programs took."""
    if timeline is None:
        return None
    df = timeline[timeline["phase"] == phase]
    if df.empty:
        return None
    g = df.groupby(["vcpu", "rep"])
    covered = float((g["end_host_tsc"].max() - g["start_host_tsc"].min()).sum())
    unknown = df[df["state"] == UNKNOWN_STATE]
    covered -= float((unknown["end_host_tsc"] - unknown["start_host_tsc"]).sum())
    # the union of each vCPU's off and frozen rows per repetition (they may overlap): sorted by
    # start, a row adds what reaches past every earlier row's end
    o = df[df["state"].isin(states)].sort_values(["vcpu", "rep", "start_host_tsc"], kind="stable")
    a, b = o["start_host_tsc"].to_numpy(np.float64), o["end_host_tsc"].to_numpy(np.float64)
    reach = o.groupby(["vcpu", "rep"])["end_host_tsc"].cummax().to_numpy(np.float64)
    key = o[["vcpu", "rep"]].to_numpy()
    first = np.ones(len(o), dtype=bool)
    first[1:] = (key[1:] != key[:-1]).any(axis=1)
    before = np.where(first, -np.inf, np.concatenate(([-np.inf], reach[:-1])))
    off = float(np.sum(np.maximum(0.0, b - np.maximum(a, before))))
    return off / covered if covered > 0 else None


def warnings(run, phases: dict, base: str | None) -> list:
    """Sentences that qualify the whole verdict: a baseline that was not idle, a nested host."""
    out = []
    bp = phases.get(base) if base else None
    if bp and bp["status"] == "ok":
        off = bp["vcpu_off_share"]
        if off is None:
            out.append(f"Whether the baseline {base} ran on an idle host is unknown: there is no host timeline "
                       "of its vCPUs.")
        elif off > BASELINE_OFF_MAX:
            out.append(f"The baseline {base} was not idle: its vCPUs were off the host CPU {100 * off:.0f}% of "
                       f"the time (host timeline; more than {100 * BASELINE_OFF_MAX:.0f}%), so the contrast "
                       "with it understates what host load does.")
    if run.meta.host.hypervisor is True:
        out.append("The host is itself a virtual machine (the CPUID hypervisor bit, meta.json host.hypervisor): "
                   "this guest is nested, its VM exits are slow, and long waits are common even on an idle host.")
    return out + guest_warnings(run) + emulator_warnings(run, phases) + freeze_lengths.warnings(run)


# A TCG run leans on QEMU's own locks where more of its long waits' off time than this was its vCPU
# threads blocking inside QEMU (waiting for its global lock, which a vCPU thread takes each time it
# leaves translated code: at every `pause` of a spin loop), rather than being preempted.
BLOCKED_OFF_MAX = 0.10


def emulator_warnings(run, phases: dict) -> list:
    """Under TCG: the phases whose long waits' holder-off or waiter-off time was more than
    BLOCKED_OFF_MAX blocked inside QEMU (lhp.off_cycles), so that their LHP figures lean on QEMU's
    own locks as much as on the host's scheduler."""
    if (run.meta.accelerator or "").lower() != "tcg":
        return []
    leaning = []
    for phase, p in phases.items():
        oc = p.get("off_cycles") if p.get("status") == "ok" else None
        if not oc:
            continue
        shares = lhp_share.blocked_shares(oc)
        if shares and max(shares.values()) > BLOCKED_OFF_MAX:
            leaning.append(f"{phase} ({', '.join(f'{100 * v:.0f}% of the {k}s' for k, v in shares.items())})")
    if not leaning:
        return []
    return ["Under TCG this run's long waits lean on QEMU's own locks: their vCPU threads blocked inside QEMU "
            "(sleeping, not preempted) for more than " + f"{100 * BLOCKED_OFF_MAX:.0f}% of their off time in " +
            "; ".join(leaning) + ". A vCPU thread takes QEMU's global lock each time it leaves translated code "
            "(with pause = on, at every pause of a spin loop), so one that is preempted or frozen while holding it "
            "stalls the others: a lock-holder preemption under the guest's. Waits whose holder was off only so are "
            "'holder blocked'; compare with pause = off (docs/measurements.md, \"Under TCG\")."]


def guest_warnings(run) -> list:
    """What a Linux guest's waits can and cannot say (meta.json "guest")."""
    if run.meta.guest != "linux":
        return []
    out = ["A Linux guest: its waits are the spinlock slow path's, probed by spinlab's agent (contended "
           "acquisitions only; waits outside the slow path, such as bit spinlocks, are not seen), and its "
           "spinlocks record no holder."]
    if run.holder_rule:
        out.append("Each long wait's holder is named by a rule: " + lhp.HOLDER_RULE_TEXT[run.holder_rule] +
                   "; so holder-running waits are not split into slow holders and queued ones.")
    else:
        out.append(f"At {run.meta.vcpus} vCPU(s) no rule names the holder, so every long wait's class "
                   "is unknown here.")
    return out


def build(run, summary: dict) -> dict:
    """The verdict of a run alone, for a test or a tool: attributes its long waits
    (attribution.attribute_run) and judges. The report attributes once and calls judge."""
    return judge(run, attribution.attribute_run(run, summary["long_wait_threshold"]), summary)


def judge(run, att, summary: dict) -> dict:
    """The verdict of one run whose long waits att attributed (attribution.Attribution), beside its
    summary (summary.summarise): per phase the LHP headline, its causes, the secondary rates. The
    phases' figures first, each rate as what it divides per repetition (confidence.Rate), then the
    warnings, then every rate's interval and test in one pass (confidence.estimate)."""
    conf, thr = summary["confidence"], summary["long_wait_threshold"]
    base = summary["baseline_phase"]
    base_reps = [rep_of(run, s, att.tables.get((s.phase, s.rep)), thr) for s in run.snaps(base)] if base and run.snaps(base) else None
    phases = {}
    for phase in run.phases:
        snaps = run.snaps(phase)
        if not snaps:
            phases[phase] = {"status": "missing"}
            continue
        reps = base_reps if phase == base else [rep_of(run, s, att.tables.get((s.phase, s.rep)), thr) for s in snaps]
        against = None if phase == base else base_reps
        s = summary["phases"][phase]
        phases[phase] = {
            "status": "ok", "repetitions": len(reps),
            "lhp_spin": lhp_spin(reps, against, thr),
            "kernel_spin": kernel_spin(reps, against),
            "causes": causes(reps, thr),
            "long_waits": sum(r["long_waits"] for r in reps),
            "per_second": _rate(reps, against, "long_waits", "duration_s", CORRECTION),
            "per_million_acquisitions": _rate(reps, against, "long_waits_e6", "acquisitions", CORRECTION * 1e6),
            "lhp": lhp_counts(reps),
            "vcpu_off_share": off_share(run.timeline, phase),
            # the long waits' off cycles per side, and of them those its thread blocked (summary.json)
            "off_cycles": (s.get("lhp") or {}).get("off_cycles"),
            # who took the holder's CPU (preemptors.py): the summary's, kept beside the spin it shares out
            "preemptors": s.get("preemptors"),
            "throughput": throughput_change(s.get("throughput"), summary["phases"].get(base, {}).get("throughput"),
                                            phase == base),
        }
    said = warnings(run, phases, base)
    return {"baseline_phase": base, "confidence": conf, "long_k": LONG_K, "long_wait_threshold": thr,
            "test": "Welch's two-sided t-test on log values across repetitions (0.5 added to counts, "
                    "half a threshold to LHP cycles)",
            "warnings": said, "phases": estimate(phases, conf)}
