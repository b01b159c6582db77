"""The speedup table, in the form of Ouyang and Lange (VEE'13, "Preemptable ticket spinlocks"):
each lock's throughput over the ticket lock's, per overcommit level and host condition. (pure)

A sweep gets the table when it has a vm.lock axis with `ticket` among its values. Each cell is
compared with the ticket cell of the same other axis values (vm.cpus and the like), phase by
phase. Overcommit is the cell's vCPUs over its host's CPUs (meta.json: vcpus, host.cpus); a
pinned run says so in its pinning and is not corrected for.

The speedup is the ratio of geometric means of the repetitions' throughputs (lockbench ops/s),
with the Welch t interval of the difference of the logs and its two-sided p-value
(spinlab_report.confidence.log_ratio, the verdict's test against the baseline). Beside it, per
cell, what a mitigation study reads beside the speedup: the long waits behind a preempted holder per
second (the verdict's lhp_spin.waits_per_second, mean and interval) and the spin cycles per
acquisition of the throughput classes (wait cycles summed over acquisitions, each repetition);
what each mitigation removes: the share of spin behind a preempted holder (cycles of long waits
whose holder was off its host CPU over all wait cycles, each repetition), the mix of the long
waits' causes (holder-preempted, waiter-preempted, both: shares of the waits whose side is
known), and the paravirtual lock's halts and kicks per second (its pv_halts and pv_kicks,
summed over the CPUs). The measured order of the locks under overcommit (above 1 vCPU per host
CPU) is stated beside the published figures (PAPER).
"""
from .report_lib import log_ratio

BASELINE = "ticket"
LOCK_AXIS = "vm.lock"
CPUS_AXIS = "vm.cpus"

# The published figures, shown beside ours as (what, the speedup over the lock it replaced):
# Ouyang and Lange, VEE'13, section 5 (the average speedup of the preemptable ticket lock over
# the ticket lock across their benchmarks and overcommit levels); Linux's adaptive spinning of
# the paravirtual queued lock (commit cd0272fab785: a kernel build on 32 physical CPUs with 48
# vCPUs, 5m00.2s before, 4m37.5s after: 300.2 / 277.5); boosting the queue head's vCPU (ebizzy
# at 1, 2 and 3 VMs: +6 %, +70 %, +74 %).
PAPER = [("preemptable ticket over ticket, non-paravirtual VMM (VEE'13, average)", 5.32),
         ("preemptable ticket over ticket, paravirtual VMM (VEE'13, average)", 7.91),
         ("pv qspinlock adaptive spinning, kernel build, 48 vCPUs on 32 CPUs (Linux cd0272fab785: "
          "5m00.2s to 4m37.5s)", 300.2 / 277.5),
         ("boosting the queue head's vCPU, ebizzy, 1 VM", 1.06),
         ("boosting the queue head's vCPU, ebizzy, 2 VMs", 1.70),
         ("boosting the queue head's vCPU, ebizzy, 3 VMs", 1.74)]
# The locks whose order under overcommit the table states (those of them the sweep has).
ORDERED = ("tas", "pvqspin", "pticket", "mcs", "ticket")


def applies(plan: dict) -> bool:
    """The sweep has a vm.lock axis with the ticket lock among its values."""
    return any(a["key"] == LOCK_AXIS and BASELINE in a["values"] for a in plan["axes"])


def usable(throughputs) -> bool:
    """A phase's repetitions a ratio of geometric means can use: some, and none without
    throughput (a repetition with 0 makes the log undefined; without_throughput names those)."""
    return bool(throughputs) and min(throughputs) > 0


def overcommit(cell_meta: dict | None, phase: str | None = None) -> float | None:
    """vCPUs per host CPU of a cell's run in `phase` (None without its meta.json). A
    neighbours-N phase counts every VM's vCPUs: meta.json's neighbours.overcommit for that phase
    (the runner's figure, over the host CPUs the VMs may use); any other phase the measured VM's
    vCPUs over the host's CPUs."""
    if not cell_meta:
        return None
    by_phase = ((cell_meta.get("neighbours") or {}).get("overcommit") or {})
    if phase is not None and isinstance(by_phase.get(phase), (int, float)) and phase.startswith("neighbours-"):
        return float(by_phase[phase])
    vcpus, host = cell_meta.get("vcpus"), (cell_meta.get("host") or {}).get("cpus")
    if not isinstance(vcpus, int) or not isinstance(host, int) or host <= 0:
        return None
    return vcpus / host


def _others(values: dict) -> tuple:
    return tuple((k, v) for k, v in values.items() if k != LOCK_AXIS)


def table(plan: dict, rows: list, confidence: float = 0.95) -> list:
    """One entry per (other axis values, phase, lock other than ticket) where both cells have
    throughputs: {others, overcommit, phase, lock, speedup {ratio, low, high, p, n, n_base},
    lhp_waits_per_s, spin_per_acquisition, and the same two of the ticket cell}. Sorted by
    overcommit, then phase order, then lock order."""
    if not applies(plan):
        return []
    locks = next(a["values"] for a in plan["axes"] if a["key"] == LOCK_AXIS)
    base = {(_others(r["values"])): r for r in rows if r["values"].get(LOCK_AXIS) == BASELINE}
    phases = []
    for r in rows:
        phases += [p for p in r.get("reps", {}) if p not in phases]
    out = []
    for r in rows:
        lock = r["values"].get(LOCK_AXIS)
        b = base.get(_others(r["values"]))
        if lock == BASELINE or b is None:
            continue
        for phase in phases:
            mine, theirs = r.get("reps", {}).get(phase), b.get("reps", {}).get(phase)
            if not mine or not theirs:
                continue
            xs, bs = mine["throughput"], theirs["throughput"]
            if not usable(xs) or not usable(bs):
                continue
            out.append({"others": dict(_others(r["values"])), "overcommit": overcommit(r.get("meta"), phase),
                        "phase": phase, "lock": lock, "cell": r["cell"], "base_cell": b["cell"],
                        "speedup": log_ratio(xs, bs, confidence),
                        "lhp_waits_per_s": mine.get("lhp_waits_per_s"),
                        "spin_per_acquisition": mine.get("spin_per_acquisition"),
                        "base_lhp_waits_per_s": theirs.get("lhp_waits_per_s"),
                        "base_spin_per_acquisition": theirs.get("spin_per_acquisition"),
                        "holder_off_spin_share": mine.get("holder_off_spin_share") or [],
                        "causes": mine.get("causes"),
                        "pv_halts_per_s": mine.get("pv_halts_per_s") or [],
                        "pv_kicks_per_s": mine.get("pv_kicks_per_s") or []})
    order = {p: i for i, p in enumerate(phases)}
    out.sort(key=lambda e: (e["overcommit"] if e["overcommit"] is not None else float("inf"),
                            sorted(e["others"].items()), order[e["phase"]], locks.index(e["lock"])))
    return out


def measured_order(entries: list, locks=ORDERED) -> list:
    """Under overcommit (above 1 vCPU per host CPU), per (overcommit, other axes, phase): the
    locks of `locks` the table has, best first, by their speedup over ticket (ticket: 1).
    [{overcommit, others, phase, order: [(lock, ratio, low, high)]}]; a group with no lock
    besides ticket is left out."""
    groups = {}
    for e in entries:
        if e["overcommit"] is None or e["overcommit"] <= 1 or e["lock"] not in locks:
            continue
        key = (e["overcommit"], tuple(sorted(e["others"].items())), e["phase"])
        s = e["speedup"]
        groups.setdefault(key, []).append((e["lock"], s["ratio"], s.get("low"), s.get("high")))
    out = []
    for (oc, others, phase), got in groups.items():
        if BASELINE in locks:
            got.append((BASELINE, 1.0, None, None))
        got.sort(key=lambda x: (-x[1], locks.index(x[0])))
        out.append({"overcommit": oc, "others": dict(others), "phase": phase, "order": got})
    return out


def pairs(plan: dict, rows: list, confidence: float = 0.95) -> list:
    """Every two locks of the vm.lock axis against each other, per other axis values and phase
    (the speedup table compares each with ticket only: whether pvqspin beats mcs needs their own
    interval, not two intervals against a third lock). One entry per pair whose cells both have
    throughputs: {others, overcommit, phase, faster, slower, cell, base_cell, speedup (faster over
    slower: log_ratio), separated (the interval's low end above 1)}. `faster` is the one with
    the higher geometric mean. Sorted as table() is, then by the faster lock's place on the axis."""
    if not any(a["key"] == LOCK_AXIS for a in plan["axes"]):
        return []
    locks = next(a["values"] for a in plan["axes"] if a["key"] == LOCK_AXIS)
    groups, phases = {}, []
    for r in rows:
        if r["values"].get(LOCK_AXIS) in locks:
            groups.setdefault(_others(r["values"]), []).append(r)
        phases += [p for p in r.get("reps", {}) if p not in phases]
    out = []
    for others, cells in groups.items():
        cells = sorted(cells, key=lambda r: locks.index(r["values"][LOCK_AXIS]))
        for phase in phases:
            have = [(r, ((r.get("reps") or {}).get(phase) or {}).get("throughput")) for r in cells]
            have = [(r, xs) for r, xs in have if usable(xs)]
            for i, (a, xa) in enumerate(have):
                for b, xb in have[i + 1:]:
                    s = log_ratio(xa, xb, confidence)
                    fast, slow = (a, b) if s["ratio"] >= 1 else (b, a)
                    if fast is b:  # the faster one first
                        s = log_ratio(xb, xa, confidence)
                    out.append({"others": dict(others), "overcommit": overcommit(fast.get("meta") or slow.get("meta"), phase),
                                "phase": phase, "faster": fast["values"][LOCK_AXIS],
                                "slower": slow["values"][LOCK_AXIS], "cell": fast["cell"], "base_cell": slow["cell"],
                                "speedup": s, "separated": s.get("low") is not None and s["low"] > 1})
    order = {p: i for i, p in enumerate(phases)}
    out.sort(key=lambda e: (e["overcommit"] if e["overcommit"] is not None else float("inf"),
                            sorted(e["others"].items()), order[e["phase"]], locks.index(e["faster"]),
                            locks.index(e["slower"])))
    return out


def without_throughput(rows: list) -> list:
    """[(cell, phase, throughputs)] of the cells' phases that a ratio cannot use: a repetition
    with no throughput (0 acquisitions a second: the lock made no progress in it), so the log
    ratio is undefined. The tables leave them out; sweep.html names them."""
    out = []
    for r in rows:
        for phase, reps in (r.get("reps") or {}).items():
            xs = (reps or {}).get("throughput") or []
            if xs and not usable(xs):
                out.append((r["cell"], phase, list(xs)))
    return out


PAIRS_FIELDS = ["overcommit", "phase", "others", "faster", "slower", "speedup", "speedup_low", "speedup_high",
                "p", "separated", "repetitions", "base_repetitions", "cell", "base_cell"]


def write_pairs_csv(path: str, entries: list) -> None:
    """pairs.csv: one line per pair of locks (pairs()); separated is 1 when the faster lock's
    interval over the slower one lies above 1."""
    import csv
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(PAIRS_FIELDS)
        for e in entries:
            s = e["speedup"]
            line = [e["overcommit"], e["phase"], ";".join(f"{k}={v}" for k, v in e["others"].items()),
                    e["faster"], e["slower"], s.get("ratio"), s.get("low"), s.get("high"), s.get("p"),
                    int(e["separated"]), s.get("n"), s.get("n_base"), e["cell"], e["base_cell"]]
            w.writerow(["" if v is None else (f"{v:.6g}" if isinstance(v, float) else v) for v in line])


def order_text(o: dict) -> str:
    """'tas 3.10x > pvqspin 2.00x > ticket 1x > mcs 0.50x' (ticket is the reference, 1x)."""
    return " > ".join(f"{lock} 1x" if lock == BASELINE else f"{lock} {r:.2f}x" for lock, r, _, _ in o["order"])


def mean(values: list):
    """The mean of a list of numbers; None for an empty one."""
    return sum(values) / len(values) if values else None


def ratio_text(s: dict) -> str:
    """'3.1x [2.4, 4.0]' (the interval when known), or '' for no ratio."""
    if not s or s.get("ratio") is None:
        return ""
    text = f"{s['ratio']:.2f}x"
    if s.get("low") is not None and s.get("high") is not None:
        text += f" [{s['low']:.2f}, {s['high']:.2f}]"
    return text


def _rate(r: dict | None) -> tuple:
    """(mean, low, high) of a verdict rate or of mean_ci's dict; Nones when absent."""
    r = r or {}
    return r.get("mean"), r.get("low"), r.get("high")


_mean = mean


def _mix(causes: dict | None) -> list:
    """[holder-preempted, waiter-preempted, both shares, n] of a cell's cause mix (Nones without)."""
    if not causes:
        return [None] * 4
    return [causes.get("holder-preempted"), causes.get("waiter-preempted"), causes.get("both"), causes.get("n")]


CSV_FIELDS = ["overcommit", "phase", "lock", "others", "speedup", "speedup_low", "speedup_high", "p",
              "repetitions", "base_repetitions", "lhp_waits_per_s", "lhp_waits_per_s_low", "lhp_waits_per_s_high",
              "base_lhp_waits_per_s", "spin_per_acquisition", "base_spin_per_acquisition", "cell", "base_cell",
              "holder_off_spin_share", "holder_preempted", "waiter_preempted", "both", "causes_n",
              "pv_halts_per_s", "pv_kicks_per_s"]


def write_csv(path: str, entries: list) -> None:
    """speedup.csv: one line per table entry (spin per acquisition: the repetitions' mean)."""
    import csv
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_FIELDS)
        for e in entries:
            s = e["speedup"]
            lw = _rate(e["lhp_waits_per_s"])
            line = [e["overcommit"], e["phase"], e["lock"], ";".join(f"{k}={v}" for k, v in e["others"].items()),
                    s.get("ratio"), s.get("low"), s.get("high"), s.get("p"), s.get("n"), s.get("n_base"),
                    *lw, _rate(e["base_lhp_waits_per_s"])[0], _mean(e["spin_per_acquisition"] or []),
                    _mean(e["base_spin_per_acquisition"] or []), e["cell"], e["base_cell"],
                    _mean(e.get("holder_off_spin_share") or []), *_mix(e.get("causes")),
                    _mean(e.get("pv_halts_per_s") or []), _mean(e.get("pv_kicks_per_s") or [])]
            w.writerow(["" if v is None else (f"{v:.6g}" if isinstance(v, float) else v) for v in line])
