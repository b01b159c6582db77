#!/usr/bin/python3
"""Measure the Linux guest under TCG: boot time, slow-path waits per lock mode and workload,
and what the probes cost. The numbers in README.md "Measurements" come from this script.

Run it as `spinlab-linux measure boot|waits|cost ...` (which puts vm-images/ on PYTHONPATH).

  measure.py boot  [--rounds N]            PVH vmlinux against vmlinuz, an idle 1 s guest
  measure.py waits [--rounds N] [--seconds S] [--workloads hackbench,forkexec]
                                           tas and native at 2 vCPUs: waits/s, share >= 2^20
  measure.py cost  [--rounds N] [--seconds S] [--phases P]
                                           probecost boots, and each workload's throughput
                                           traced against untraced within one boot (A/B:
                                           P phases, probes off and on in turn)
  measure.py creep [--rounds N] [--seconds S] [--spacings 0,100,...]
                                           issue 52: how TCG's guest TSC moves against the
                                           host's as the guest reads it: tscread at each
                                           spacing (and idle) on 1 and 2 vCPUs, the offset's
                                           slope over the workload's window (clock helper)
Rounds interleave the configurations, so that a change of host load touches all of them.
Each run's summary.json stays under --out; the script prints one line per run and a table,
and writes measure.json there. The host's load average is printed beside every run: these are
TCG guests, whose vCPUs are host threads the host's other work preempts.
"""
import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import qemu_launch  # vm-images/ (PYTHONPATH: `spinlab-linux measure` sets it)
from spinlab_linux import boot, clock, fetch, paths


def load():
    return os.getloadavg()[0]


def one(cfg, out, label):
    t = time.monotonic()
    l0 = load()
    res, run = boot.run_guest(cfg, out)
    res["_label"], res["_load1"], res["_elapsed"] = label, (l0 + load()) / 2, time.monotonic() - t
    return res


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def do_boot(a, out):
    k = fetch.load_kernel_json()
    kernels = {"vmlinux (PVH)": k["boot_kernel"], "vmlinuz": k["vmlinuz"]}
    rows = {name: [] for name in kernels}
    for r in range(a.rounds):
        for name, path in kernels.items():
            cfg = boot.GuestConfig(kernel=path, cpus=2, mode="tas", workload="idle", seconds=1)
            res = one(cfg, out / f"boot-{r}-{name.split()[0]}", name)
            rows[name].append(res)
            print(f"{name:14} first frame {res['host_to_first_frame_s']:.2f} s, guest uptime "
                  f"{res['guest_uptime_at_agent_s']:.2f} s, QEMU {res['host_wall_s']:.2f} s, "
                  f"load {res['_load1']:.2f}", flush=True)
    table = {}
    for name, rs in rows.items():
        table[name] = {"first_frame_s": med([x["host_to_first_frame_s"] for x in rs]),
                       "guest_uptime_s": med([x["guest_uptime_at_agent_s"] for x in rs]),
                       "qemu_wall_s": med([x["host_wall_s"] for x in rs]), "n": len(rs)}
        print(f"{name:14} median of {len(rs)}: first frame {table[name]['first_frame_s']:.2f} s "
              f"(guest uptime {table[name]['guest_uptime_s']:.2f} s), QEMU "
              f"{table[name]['qemu_wall_s']:.2f} s for a 1 s idle guest")
    return table


def do_waits(a, out):
    combos = [(m, w) for w in a.workloads for m in ("tas", "native")]
    rows = {c: [] for c in combos}
    for r in range(a.rounds):
        for mode, wl in combos:
            cfg = boot.GuestConfig(cpus=2, mode=mode, workload=wl, seconds=a.seconds)
            res = one(cfg, out / f"waits-{r}-{mode}-{wl}", f"{mode} {wl}")
            s = res["summary"]
            rows[(mode, wl)].append(res)
            print(f"{mode:6} {wl:9} waits {s['waits']:6} ({s['waits_per_s']:7.1f}/s), >= 2^20 "
                  f"{s['long_waits']:4} ({100 * s['long_share']:5.2f} %), ops/s "
                  f"{s['workload']['ops_per_s']:8.2f}, lost {s['lost_events']}, unpaired "
                  f"{s['unpaired_begin']}/{s['unpaired_end']}, load {res['_load1']:.2f}",
                  flush=True)
    table = {}
    for (mode, wl), rs in rows.items():
        ss = [x["summary"] for x in rs]
        table[f"{mode} {wl}"] = {
            "waits_per_s": med([s["waits_per_s"] for s in ss]),
            "long_share": med([s["long_share"] for s in ss]),
            "long_per_s": med([s["long_waits"] / s["window_s"] for s in ss]),
            "ops_per_s": med([s["workload"]["ops_per_s"] for s in ss]),
            "runs": len(rs), "load1": med([x["_load1"] for x in rs]),
            "waits_per_s_all": [round(s["waits_per_s"], 1) for s in ss],
            "long_share_all": [round(s["long_share"], 4) for s in ss],
        }
        t = table[f"{mode} {wl}"]
        print(f"{mode:6} {wl:9} median of {len(rs)}: {t['waits_per_s']:.1f} waits/s, "
              f"{100 * t['long_share']:.2f} % >= 2^20 ({t['long_per_s']:.2f}/s), "
              f"{t['ops_per_s']:.2f} ops/s; all waits/s {t['waits_per_s_all']}, "
              f"long shares {t['long_share_all']}")
    return table


def do_cost(a, out):
    cost = []
    ab = {w: [] for w in a.workloads}
    for r in range(a.rounds):
        cfg = boot.GuestConfig(cpus=2, mode="tas", workload="probecost", seconds=1)
        res = one(cfg, out / f"cost-{r}-probecost", "probecost")
        pc = res["trailer"]["probecost"]
        per = [(x["probed_cycles"] - x["plain_cycles"]) / pc["calls"] for x in pc["rounds"]]
        plain = [x["plain_cycles"] / pc["calls"] for x in pc["rounds"]]
        cost.append({"added": med(per), "plain": med(plain), "min_added": min(per),
                     "flags": pc["kprobes_list_flags"], "load1": res["_load1"]})
        print(f"probecost {pc['symbol']} {pc['kprobes_list_flags']}: plain {med(plain):.0f}, "
              f"the pair adds {med(per):.0f} cycles a call (min {min(per):.0f}), "
              f"load {res['_load1']:.2f}", flush=True)
        for wl in a.workloads:
            cfg = boot.GuestConfig(cpus=2, mode="tas", workload=wl, seconds=a.seconds,
                                   ab_phases=a.phases)
            res = one(cfg, out / f"cost-{r}-{wl}-ab", f"{wl} A/B")
            x = res["summary"]["ab"]
            x["waits_per_traced_s"] = res["summary"]["waits_per_s"]
            x["load1"] = res["_load1"]
            ab[wl].append(x)
            print(f"{wl:9} A/B {x['phases']} phases: traced {x['traced_ops_per_s']:.2f}, "
                  f"untraced {x['untraced_ops_per_s']:.2f} ops/s, ratio {x['ratio']:.3f} "
                  f"(pairs {' '.join(f'{p:.2f}' for p in x['pair_ratios'])}), "
                  f"{x['waits_per_traced_s']:.0f} waits/s traced, load {x['load1']:.2f}",
                  flush=True)
    table = {"probe_pair_cycles": med([c["added"] for c in cost]),
             "probe_pair_cycles_all": [round(c["added"]) for c in cost],
             "plain_call_cycles": med([c["plain"] for c in cost]),
             "flags": cost[0]["flags"] if cost else ""}
    print(f"probe pair: median {table['probe_pair_cycles']:.0f} cycles added a call "
          f"(per boot {table['probe_pair_cycles_all']}), a plain getppid "
          f"{table['plain_call_cycles']:.0f} cycles")
    for wl, xs in ab.items():
        pairs = [p for x in xs for p in x["pair_ratios"]]
        ratios = [x["ratio"] for x in xs]
        table[wl] = {"ratio_per_boot": [round(v, 3) for v in ratios],
                     "ratio_median_of_boots": med(ratios),
                     "pair_ratio_median": med(pairs), "pairs": len(pairs),
                     "pair_ratio_quartiles": (statistics.quantiles(pairs, n=4)
                                              if len(pairs) >= 2 else None),
                     "waits_per_traced_s": med([x["waits_per_traced_s"] for x in xs])}
        t = table[wl]
        print(f"{wl:9} traced/untraced throughput within boots: ratio per boot "
              f"{t['ratio_per_boot']}; median of {t['pairs']} adjacent-phase pairs "
              f"{t['pair_ratio_median']:.3f} (quartiles "
              f"{', '.join(f'{q:.3f}' for q in t['pair_ratio_quartiles'] or [])}); "
              f"{t['waits_per_traced_s']:.0f} waits/s traced")
    return table


def window_slope(out_dir, window):
    """The clock offset (host - guest) over the workload's window [tsc_start, tsc_end] (guest
    TSC): clock.offset_stats of the points inside it (the narrowest point of its first and
    last tenth), as its slope in ppm of host time and its movement in cycles; negative: the
    guest's TSC gained on the host's."""
    pts = [p for p in clock.read_points(Path(out_dir) / "clock.csv")
           if window["tsc_start"] <= p[2] <= window["tsc_end"]]
    s = clock.offset_stats(pts) if len(pts) >= 4 else None
    if not s or not s["drift_ppm"]:
        return None
    return {"slope_ppm": -s["drift_ppm"], "moved_cycles": s["first"] - s["last"],
            "span_cycles": s["span_cycles"], "end_half_brackets_cycles": s["end_half_brackets_cycles"],
            "points": len(pts)}


def do_creep(a, out):
    spacings = [int(x) for x in a.spacings.split(",")]
    configs = [(cpus, sp) for cpus in (1, 2) for sp in [None] + spacings]
    rows = {c: [] for c in configs}
    for r in range(a.rounds):
        for cpus, sp in configs:
            label = f"{cpus} vCPU{'s' if cpus > 1 else ''}, " + ("idle" if sp is None else f"spacing {sp}")
            cfg = boot.GuestConfig(cpus=cpus, mode="tas", trace=False, clock=True,
                                   workload="idle" if sp is None else "tscread",
                                   tsc_spacing=sp, seconds=a.seconds)
            d = out / f"creep-{r}-{cpus}-{'idle' if sp is None else sp}"
            res = one(cfg, d, label)
            w = window_slope(d, res["trailer"]["window"])
            wl = res["trailer"]["workload"]
            rate = wl["ops"] / (wl["busy_ns"] / 1e9) / cpus if sp is not None and wl["busy_ns"] else 0.0
            row = {"reads_per_s_per_vcpu": rate, **(w or {}), "load1": res["_load1"]}
            rows[(cpus, sp)].append(row)
            print(f"{label:24} reads/s/vCPU {rate:12.0f}  slope "
                  f"{row.get('slope_ppm', float('nan')):9.1f} ppm  moved "
                  f"{row.get('moved_cycles', float('nan')):12.0f} cycles  load {res['_load1']:.2f}",
                  flush=True)
    table = {}
    print(f"\n{'':24} {'reads/s/vCPU':>12} {'slope ppm (median)':>19} {'min':>8} {'max':>8}")
    for (cpus, sp), rs in rows.items():
        key = f"{cpus} vCPUs, " + ("idle" if sp is None else f"spacing {sp}")
        sl = [x["slope_ppm"] for x in rs if "slope_ppm" in x]
        table[key] = {"cpus": cpus, "spacing": sp,
                      "reads_per_s_per_vcpu": med([x["reads_per_s_per_vcpu"] for x in rs]),
                      "slope_ppm_median": med(sl), "slope_ppm_min": min(sl, default=None),
                      "slope_ppm_max": max(sl, default=None), "runs": rs}
        print(f"{key:24} {table[key]['reads_per_s_per_vcpu']:12.0f} {med(sl):19.1f} "
              f"{min(sl, default=float('nan')):8.1f} {max(sl, default=float('nan')):8.1f}")
    try:
        table["host_clocksource"] = Path(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource").read_text().strip()
    except OSError:
        table["host_clocksource"] = None
    return table


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=("boot", "waits", "cost", "creep"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--workloads", default="hackbench,forkexec")
    p.add_argument("--phases", type=int, default=10,
                   help="cost: A/B phases per boot (probes off and on in turn)")
    p.add_argument("--spacings", default="100000,10000,1000,100,0",
                   help="creep: tscread spacings (ALU iterations between TSC reads)")
    p.add_argument("--out", default=str(paths.build_dir() / "measure"))
    a = p.parse_args()
    a.workloads = a.workloads.split(",")
    out = Path(a.out) / f"{time.strftime('%Y%m%d-%H%M%S')}-{a.what}"
    out.mkdir(parents=True, exist_ok=True)
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    table = {"boot": do_boot, "waits": do_waits, "cost": do_cost, "creep": do_creep}[a.what](a, out)
    doc = {"what": a.what, "started": started, "argv": sys.argv, "rounds": a.rounds,
           "seconds": a.seconds, "cpu": qemu_launch.host_cpu_model(),
           "nproc": os.cpu_count(), "table": table}
    fetch.write_json(out / "measure.json", doc)
    print(f"wrote {out / 'measure.json'}")


if __name__ == "__main__":
    main()
