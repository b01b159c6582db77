"""How long the freeze phases' freezes really lasted against what the spec asked.

spinlab-load freeze writes one row per freeze into freezes/<phase>-r<rep>.csv
(hypervisor-hooks/freezes/freeze_record.h). A freeze holds its vCPU from the return of the
freeze write (`marked`) to the return of the thaw write (`thawed`); the injector asks for each
thaw about one thaw write early (thaw_plan.h), so on a host whose freezer is steady the applied
length is the planned one. Where the freezer's writes are slow and uneven (a cgroup v1 freezer
whose static key is patched inside the write took ~3 ms on a nested host) the freezes run long,
and the phase's long waits are those of longer freezes than its name says: the report says so.

Records written before `thawed_tsc` existed have no applied length and are not judged.

Names: a freeze phase is freeze-<N>ms and its records lie in freezes/. Results written before
issue 53 named them preempt-<N>ms and preempt/ (the injector was `spinlab-load preempt`); both
are read, here and wherever a tool asks through freeze_ms() and record_path().
"""
import glob
import os
import re
import statistics

# A phase's freezes "ran long" when their median applied length exceeds the planned one by more
# than this many ms, or by more than this share of it, whichever is larger.
LONG_MS = 1.0
LONG_SHARE = 0.05

# A freeze phase's name, N ms each freeze: freeze-<N>ms, or preempt-<N>ms (its old name).
FREEZE_PHASE = re.compile(r"(?:freeze|preempt)-(\d+)ms")
# Where the runner puts each repetition's freeze record, <phase>-r<rep>.csv: freezes/, or in
# results from before issue 53 preempt/ (its old name).
RECORD_DIRS = ("freezes", "preempt")


def freeze_ms(phase: str) -> int | None:
    """N of a freeze phase freeze-<N>ms (or preempt-<N>ms, its old name); None for any other phase."""
    m = FREEZE_PHASE.fullmatch(str(phase))
    return int(m.group(1)) if m else None


def record_path(run_path: str, phase: str, rep: int) -> str | None:
    """The freeze record of a repetition (freezes/, else the old preempt/), None when there is none."""
    for d in RECORD_DIRS:
        path = os.path.join(run_path, d, f"{phase}-r{rep}.csv")
        if os.path.exists(path):
            return path
    return None


def record_files(run_path: str) -> list:
    """(folder name, path) of every freeze record of the run, freezes/ first, then preempt/."""
    return [(d, path) for d in RECORD_DIRS for path in sorted(glob.glob(os.path.join(run_path, d, "*.csv")))]


def _rows(path: str) -> tuple[list, str | None]:
    """(rows as dicts, None) or ([], why the file cannot be read)."""
    try:
        with open(path) as f:
            lines = [l.rstrip("\n") for l in f if l.strip()]
    except OSError as e:
        return [], f"cannot be read ({e.strerror})"
    if not lines:
        return [], None
    head = lines[0].split(",")
    rows = []
    for n, line in enumerate(lines[1:], start=2):
        fields = line.split(",")
        if len(fields) != len(head):
            return rows, f"line {n} has {len(fields)} fields, the header {len(head)}"
        rows.append(dict(zip(head, fields)))
    return rows, None


def phase_lengths(run_path: str) -> dict:
    """{phase: {"freezes": N, "planned_ms": median, "applied_ms": median or None, "problems": [..]}}
    over every repetition's record of the run's freeze phases."""
    out = {}
    for folder, path in record_files(run_path):
        stem = os.path.basename(path)[:-len(".csv")]
        phase = stem.rsplit("-r", 1)[0]
        p = out.setdefault(phase, {"freezes": 0, "planned": [], "applied": [], "problems": []})
        rows, why = _rows(path)
        if why:
            p["problems"].append(f"{folder}/{os.path.basename(path)} {why}")
        for r in rows:
            try:
                planned = (int(r["planned_end_ns"]) - int(r["planned_begin_ns"])) / 1e6
                marked = int(r["marked_ns"])
                thawed = int(r["thawed_ns"]) if "thawed_ns" in r else 0
            except (KeyError, ValueError) as e:
                p["problems"].append(f"{folder}/{os.path.basename(path)}: a row without a readable {e}")
                break
            p["freezes"] += 1
            p["planned"].append(planned)
            if marked and thawed >= marked:
                p["applied"].append((thawed - marked) / 1e6)
    return {phase: {"freezes": p["freezes"],
                    "planned_ms": statistics.median(p["planned"]) if p["planned"] else None,
                    "applied_ms": statistics.median(p["applied"]) if p["applied"] else None,
                    "problems": p["problems"]}
            for phase, p in out.items()}


def ran_long(lengths: dict) -> bool:
    planned, applied = lengths["planned_ms"], lengths["applied_ms"]
    if planned is None or applied is None:
        return False
    return applied - planned > max(LONG_MS, LONG_SHARE * planned)


def _thaw_write_ms(freezer: list, phase: str) -> float | None:
    """The median of the thaw writes the phase's conditions measured before their first freeze
    (freezer: the run's meta.freezer, reader.Freezer each)."""
    writes = [f.thaw_write_ms for f in freezer if str(f.slot).rsplit("-r", 1)[0] == phase]
    writes = [w for w in writes if isinstance(w, (int, float))]
    return statistics.median(writes) if writes else None


def warnings(run) -> list:
    """A sentence per freeze phase whose freezes ran long, and per record that could not be read."""
    out = []
    for phase, lengths in phase_lengths(run.path).items():
        out += [f"The freeze record {p}: its freezes are left out of the length check." for p in lengths["problems"]]
        if not ran_long(lengths):
            continue
        write = _thaw_write_ms(run.meta.freezer, phase)
        cause = (f" (the freezer's thaw write took {write:.2f} ms before the first freeze, meta.json freezer)"
                 if write is not None else "")
        out.append(f"The freezes of {phase} ran long: they held the vCPU a median {lengths['applied_ms']:.2f} ms, "
                   f"not the {lengths['planned_ms']:.2f} ms planned, over {lengths['freezes']} freezes{cause}. "
                   "The host's freezer is slow or uneven; the phase's long waits are those of the longer freezes.")
    return out
