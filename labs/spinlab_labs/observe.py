"""What a lab checker returns, and the readings of a results directory the checkers share.

Contract: a checker (labs/N-name/check.py) has `check(results_dir) -> list[Observation]`, one
Observation per expected observation of its worksheet, in the worksheet's order. It raises
LabInputError (a sentence naming the directory and what is missing) when the directory is not
results this lab can be checked on; it never raises for a phenomenon that is merely absent: that
is an Observation with shown=False whose `why` says, with the measured numbers, what was seen
instead.

The readings use the analysis package's public API (spinlab_report: analysis/README.md, "The Python
API"), which Python finds installed (spinlab.pth) or through the PYTHONPATH that `spinlab lab` sets
(the analysis folder beside the labs: share/spinlab/analysis, the source tree's analysis/).
"""
import json
from dataclasses import dataclass

import spinlab_report as report


class LabInputError(Exception):
    """The directory given is not results this lab can be checked on (the message says why)."""


@dataclass
class Observation:
    name: str       # short, as the worksheet names it
    expected: str   # what the student should see, in plain words, with the range
    shown: bool
    why: str        # what the results show, with numbers (when not shown: why not)


def load_results(path: str):
    """The run at path (spinlab_report.load_run's Run), or LabInputError naming what is wrong."""
    try:
        return report.load_run(path)
    except report.ContractError as e:
        raise LabInputError(f"{path} is not a spinlab results directory: {e}") from None


def need_phases(run, phases, lab: str):
    """LabInputError unless the run has snapshots of every phase named."""
    have = {s.phase for s in run.snapshots}
    missing = [p for p in phases if p not in have]
    if missing:
        raise LabInputError(f"{run.path}: no snapshot of phase(s) {', '.join(missing)} (it has "
                            f"{', '.join(sorted(have)) or 'none'}); {lab} needs results of "
                            f"`spinlab lab start` for this lab")


def accelerator(run) -> str:
    return str(run.meta.get("accelerator") or "tcg")


def guest_hz(run) -> float:
    """The guest's TSC rate (cycles per second); LabInputError when the run does not say."""
    hz = run.meta.get("guest_tsc_hz") or (run.meta.get("host") or {}).get("tsc_hz")
    if not hz:
        raise LabInputError(f"{run.path}/meta.json gives no guest_tsc_hz: cycles cannot be turned into time")
    return float(hz)


def stats(run, phase: str, prefix: str | None = None):
    """Every (snapshot, class stat) of a phase, of the lock classes starting with prefix."""
    for s in run.snaps(phase):
        for st in s.stats:
            if prefix is None or st.lock_class.startswith(prefix):
                yield s, st


def wait_hist(run, phase: str, prefix: str | None = None):
    """The phase's contended-wait log2 histogram, all repetitions, CPUs and classes (prefix) added."""
    return report.merge_hists([st.wait for _, st in stats(run, phase, prefix)])


def counts(run, phase: str, prefix: str | None = None) -> dict:
    """acquisitions, uncontended, overflow and seconds measured of a phase (all repetitions)."""
    out = {"acquisitions": 0, "uncontended": 0, "overflow": 0}
    for _, st in stats(run, phase, prefix):
        out["acquisitions"] += st.acquisitions
        out["uncontended"] += st.uncontended
        out["overflow"] += st.overflow
    out["seconds"] = sum(float(s.duration_s or 0.0) for s in run.snaps(phase))
    return out


def per_rep_acquisitions(run, phase: str, prefix: str) -> list:
    """[(rep, acquisitions, seconds)] of the classes starting with prefix."""
    out = []
    for s in run.snaps(phase):
        n = sum(st.acquisitions for st in s.stats if st.lock_class.startswith(prefix))
        out.append((s.rep, n, float(s.duration_s or 0.0)))
    return out


def attributed_long_waits(run, phase: str, threshold: int) -> dict:
    """spinlab_report.long_waits_share over the phase's snapshots: every listed wait >= threshold with its
    holder and waiter sides ('off', 'on', 'uncertain', 'unknown') and class."""
    return report.long_waits_share(run.snaps(phase), run.timeline, run.clock, threshold)


BUSY_HOST = 0.2  # an "idle" host whose vCPU threads were off their CPU this share of the time is busy


def off_share(run, phase: str, states: tuple = report.OFF_STATES) -> float | None:
    """The share of the phase's vCPU time the host timeline has the vCPU threads off their host
    CPU (in states: off or frozen), the report's own measure (spinlab_report.vcpu_off_share);
    None without a timeline of that phase."""
    return report.vcpu_off_share(run.timeline, phase, states)


def busy_share(run, phase: str) -> float | None:
    """How busy the host was around a phase: the larger of the idle-host phase's off share and
    the phase's own share of vCPU time off the host CPU for other programs (state off; a freeze
    phase's frozen time is the experiment, not other work). Other work can come and go within a
    run: beside a CPU-heavy neighbour that ran through the freeze phase only, the idle host's
    share alone missed it (issue 42). None when neither phase has a timeline."""
    shares = [s for s in (off_share(run, "idle-host"), off_share(run, phase, ("off",))) if s is not None]
    return max(shares) if shares else None


def read_json(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def cycles_text(c: float) -> str:
    """2^k style for a cycle count (k with one decimal when not a power of two)."""
    import math
    return f"2^{math.log2(c):.1f}" if c > 0 else "0"


def ms(cycles: float, hz: float) -> str:
    return f"{cycles / hz * 1000:.1f} ms"
