#!/usr/bin/env python3
"""scripts/lttng-anchor/anchor_json.py: the JSON of scripts/bench-lttng-anchor.sh.

Reads the files one run of the anchor left in its work directory, one set per round r:
  spinlab-<r>.json     user_ring_benchmark's Google Benchmark JSON (BM_UserRingSpinlockEvent,
                       drain_thread 1 and 0)
  lttng-<r>.json       lttng_anchor's one JSON object (cycles, ns, CPU time per event)
  lttng-list-<r>.txt   `lttng list SESSION` after `lttng stop` (the channel's statistics:
                       "Discarded events: N", "Lost packets: N" where LTTng prints it)
  lttng-stop-<r>.txt   `lttng stop`'s output (its warnings of discarded events)
  lttng-count-<r>.txt  babeltrace2's sink.utils.counter over the trace (absent: not counted)
  lttng-bytes-<r>.txt  the trace directory's size in bytes
and writes one JSON object (docs/trace-cost.md, "Anchor measured in the same run"), printing
its one-line summary. Standard library only.
"""
import argparse
import json
import re
import statistics
import sys
from pathlib import Path

BATCH = 10000  # events per benchmark iteration (user_ring_benchmark.cc, kBatch)
PER_EVENT = ("cycles_per_event", "ns_per_event", "cpu_cycles_per_event", "cpu_ns_per_event")


def read_text(path):
    p = Path(path)
    return p.read_text() if p.exists() else None


def spinlab_round(path):
    """{"drain_thread": {...}, "same_thread": {...}} from one user_ring_benchmark JSON."""
    doc = json.loads(Path(path).read_text())
    out = {}
    for b in doc.get("benchmarks", []):
        name = b.get("name", "")
        if not name.startswith("BM_UserRingSpinlockEvent") or b.get("run_type") == "aggregate":
            continue
        if b.get("error_occurred"):
            raise ValueError(f"{path}: {name}: {b.get('error_message')}")
        key = "drain_thread" if "drain_thread:1" in name else "same_thread"
        out[key] = {k: b[k] for k in PER_EVENT}
        out[key]["events"] = int(b["iterations"]) * BATCH
        out[key]["takes_per_event"] = b.get("takes_per_event")
        out[key]["events_lost"] = int(b.get("events_lost", 0))
        out[key]["tsc_hz"] = b.get("tsc_hz")
    if "drain_thread" not in out:
        raise ValueError(f"{path}: no BM_UserRingSpinlockEvent/drain_thread:1")
    return out


def lttng_stats(list_text, stop_text, count_text):
    """Discarded events and lost packets (lttng list), recorded events (babeltrace2)."""
    s = {"events_discarded": None, "packets_lost": None, "events_recorded": None,
         "discarded_in_trace": None, "stop_warnings": []}
    if list_text:
        m = re.findall(r"Discarded events:\s*(\d+)", list_text)
        if m:
            s["events_discarded"] = sum(int(x) for x in m)
        m = re.findall(r"Lost packets:\s*(\d+)", list_text)
        if m:
            s["packets_lost"] = sum(int(x) for x in m)
    if stop_text:
        s["stop_warnings"] = [ln.strip() for ln in stop_text.splitlines() if "arning" in ln]
    if count_text:
        # sink.utils.counter with step=0 prints its totals once; take the last figures.
        m = re.findall(r"^\s*(\d+) Event messages?", count_text, re.M)
        if m:
            s["events_recorded"] = int(m[-1])
        m = re.findall(r"^\s*(\d+) Discarded event messages?", count_text, re.M)
        if m:
            s["discarded_in_trace"] = int(m[-1])
    return s


def median_of(rounds):
    return {k: statistics.median(r[k] for r in rounds) for k in PER_EVENT}


def build(work, rounds, meta):
    work = Path(work)
    lt, sp_thread, sp_same = [], [], []
    for r in range(1, rounds + 1):
        sp = spinlab_round(work / f"spinlab-{r}.json")
        sp_thread.append(dict(sp["drain_thread"], round=r))
        if "same_thread" in sp:
            sp_same.append(dict(sp["same_thread"], round=r))
        w = json.loads((work / f"lttng-{r}.json").read_text())
        row = {k: w[k] for k in PER_EVENT}
        row["round"] = r
        row["events_emitted"] = int(w["events"]) + int(w.get("warmup", 0))
        row["events_timed"] = int(w["events"])
        row["tsc_hz"] = w.get("tsc_hz")
        row.update(lttng_stats(read_text(work / f"lttng-list-{r}.txt"),
                               read_text(work / f"lttng-stop-{r}.txt"),
                               read_text(work / f"lttng-count-{r}.txt")))
        b = read_text(work / f"lttng-bytes-{r}.txt")
        row["trace_bytes"] = int(b.split()[0]) if b and b.strip() else None
        lt.append(row)

    lt_med, sp_med = median_of(lt), median_of(sp_thread)
    ratio = {k: lt_med[k] / sp_med[k] for k in ("cycles_per_event", "cpu_cycles_per_event")}
    per_round = [a["cycles_per_event"] / b["cycles_per_event"] for a, b in zip(lt, sp_thread)]

    def total(key):
        vals = [r[key] for r in lt]
        return None if any(v is None for v in vals) else sum(vals)

    emitted, recorded, discarded = total("events_emitted"), total("events_recorded"), total("events_discarded")
    doc = dict(meta)
    doc.update({
        "benchmark": "trace-user-anchor",
        "rounds": rounds,
        "what": "cycles per user-space event of the same size (80-byte payload) in the writing "
                "thread: LTTng-UST (a session recording to a file) against spinlab's user-mode "
                "logger (user_ring_write_spinlock; user_ring_take into a Writer when the ring "
                "is full), natively on the host, alternately within each round",
        "lttng": {"rounds": lt, "median": lt_med, "events_emitted": emitted,
                  "events_recorded": recorded, "events_discarded": discarded,
                  "recorded_plus_discarded_is_emitted":
                      None if None in (emitted, recorded, discarded) else recorded + discarded == emitted},
        "spinlab": {
            "drain_thread": {"rounds": sp_thread, "median": median_of(sp_thread),
                             "events_lost": sum(r["events_lost"] for r in sp_thread)},
            "same_thread": ({"rounds": sp_same, "median": median_of(sp_same),
                             "events_lost": sum(r["events_lost"] for r in sp_same)} if sp_same else None),
        },
        "ratio_lttng_over_spinlab": ratio,
        "ratio_per_round": per_round,
        "ratio_lttng_over_spinlab_same_thread_drain":
            lt_med["cycles_per_event"] / median_of(sp_same)["cycles_per_event"] if sp_same else None,
        "spinlab_ahead": ratio["cycles_per_event"] > 1,
    })
    rec = "(not counted: no babeltrace2 count)" if recorded is None else f"{recorded:,}"
    dis = "unknown" if discarded is None else f"{discarded:,}"
    doc["summary"] = (
        f"anchor: LTTng-UST {lt_med['cycles_per_event']:.0f} cycles ({lt_med['ns_per_event']:.1f} ns) "
        f"per event, spinlab's user ring {sp_med['cycles_per_event']:.0f} cycles "
        f"({sp_med['ns_per_event']:.1f} ns): LTTng/spinlab {ratio['cycles_per_event']:.2f} "
        f"(rounds {min(per_round):.2f}-{max(per_round):.2f}; medians of {rounds} rounds); "
        f"LTTng recorded {rec} of {emitted:,} events, discarded {dis}")
    return doc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True, help="the run's work directory")
    ap.add_argument("--rounds", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--meta", default="{}", help="a JSON object merged into the output")
    a = ap.parse_args(argv)
    doc = build(a.work, a.rounds, json.loads(a.meta))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(doc, indent=2) + "\n")
    print(doc["summary"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
