#!/usr/bin/python3
"""Summarise trace_recorder_benchmark's JSON (make bench's trace-recorder.json): per offered rate,
the medians of the repetitions of events/s into the file, events lost, the recorder's CPU time per
event and its share of a CPU; the highest offered rate recorded with 0 lost; the table CRC's
recorder cost against the run-time choice's in the same run; where the recorder's time goes (the
parts alone). Prints one line per rate and writes the summary beside the input.

    scripts/bench-recorder-summary.py build/bench/trace-recorder.json [OUT]
"""
import json
import sys


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    src = argv[1]
    out = argv[2] if len(argv) > 2 else src.replace(".json", "-summary.json")
    with open(src) as f:
        doc = json.load(f)
    ctx = doc["context"]
    med = {b["run_name"]: b for b in doc["benchmarks"]
           if b.get("aggregate_name") == "median" and not b.get("error_occurred")}
    rates = []
    table = None
    for name, b in med.items():
        if not name.startswith("BM_RecordToFile/"):
            continue
        parts = name.split("/")
        offered, crc = int(parts[1]), int(parts[2])
        row = {"offered": "flat out" if offered == 0 else offered, "crc32c": "table" if crc == 0 else ctx.get("crc32c"),
               "events_per_s": b["events_per_s"], "offered_events_per_s": b["offered_events_per_s"],
               "events_lost": b["events_lost"], "lost_share": b["lost_share"],
               "recorder_ns_per_event": b["recorder_ns_per_event"], "recorder_cpu_share": b["recorder_cpu_share"],
               # What one whole CPU would record at this CPU time per event.
               "events_per_cpu_second": 1e9 / b["recorder_ns_per_event"]}
        if crc == 0:
            table = row
        else:
            rates.append(row)
    rates.sort(key=lambda r: -r["offered_events_per_s"])
    parts = {}
    for name, b in med.items():
        if name.startswith(("BM_TakeBuffer", "BM_Crc32c", "BM_WriteFrame")):
            parts[name.split("/repeats")[0] + (f" ({b['label']})" if b.get("label") else "")] = b["seconds_per_event"] * 1e9
    zero = [r for r in rates if r["events_lost"] == 0]
    best = max(zero, key=lambda r: r["events_per_s"]) if zero else None
    s = {"host_cpu": ctx.get("host_cpu"), "host_cpus": ctx.get("host_cpus"), "load_avg": ctx.get("load_avg"),
         "date": ctx.get("date"), "trace_file_fs": ctx.get("trace_file_fs"), "crc32c": ctx.get("crc32c"),
         "rates": rates, "table_crc_at_10M": table, "parts_ns_per_event": parts,
         "best_zero_loss": best, "goal_events_per_s": 10e6}
    ref = next((r for r in rates if r["offered"] == 10_000_000), None)
    if table and ref:
        s["table_over_runtime_choice_ns_per_event"] = table["recorder_ns_per_event"] / ref["recorder_ns_per_event"]
    with open(out, "w") as f:
        json.dump(s, f, indent=1)
    print(f"trace record: host {s['host_cpu']} x{s['host_cpus']}, load average {s['load_avg']}, file on {s['trace_file_fs']}, CRC-32C {s['crc32c']}")
    for r in rates:
        off = r["offered"] if isinstance(r["offered"], str) else f"{r['offered'] / 1e6:g} M/s"
        print(f"  offered {off:>9}: {r['events_per_s'] / 1e6:6.2f} M events/s into the file, lost "
              f"{r['events_lost']:,.0f} ({r['lost_share']:.1%}), recorder {r['recorder_ns_per_event']:.1f} ns/event "
              f"on {r['recorder_cpu_share']:.0%} of a CPU (= {r['events_per_cpu_second'] / 1e6:.1f} M events per CPU-second)")
    if table:
        print(f"  the table CRC at 10 M/s offered: {table['recorder_ns_per_event']:.1f} ns/event"
              + (f" ({s['table_over_runtime_choice_ns_per_event']:.2f}x)" if "table_over_runtime_choice_ns_per_event" in s else ""))
    if parts:
        print("  parts alone, ns per event: " + ", ".join(f"{k} {v:.1f}" for k, v in parts.items()))
    if best:
        print(f"  best with 0 lost: {best['events_per_s'] / 1e6:.2f} M events/s (goal >= 10 M on a quiet 2-core machine)")
    else:
        print("  no rate was recorded with 0 lost")
    print(f"  -> {out}")


if __name__ == "__main__":
    main(sys.argv)
