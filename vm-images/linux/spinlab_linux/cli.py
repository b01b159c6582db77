"""spinlab-linux: Debian's kernel as a spinlab guest, every spinlock slow-path wait recorded.

  spinlab-linux fetch        the kernel (via linux-image-amd64), busybox-static, rt-tests into
                             build/linux/ (never installed on the host); prints the kernel
  spinlab-linux initramfs    the agent and build/linux/initramfs.cpio.gz
  spinlab-linux run          boot the guest, run a workload, check the waits, write the results
  spinlab-linux check FILE   check a saved stream (stream.bin) and summarize it
  spinlab-linux groundtruth DIR   a gt run's long waits classed and checked against the holder
                             the ground-truth module recorded (run --workload gt --clock
                             --timeline --freeze-vcpus 1)
  spinlab-linux modes        the QEMU and kernel arguments of each lock mode

Exit status: 0 done; 1 the guest's stream was bad or incomplete, or the guest failed;
2 usage or setup (no kernel fetched, a lock mode the accelerator cannot give).
"""
import argparse
import json
import signal
import sys
import time
from pathlib import Path

from . import boot, clock, fetch, groundtruth, initramfs, modes, paths, records


def _log(msg):
    print(f"spinlab-linux: {msg}", file=sys.stderr, flush=True)


def _on_signal(signum, frame):
    # SIGTERM and SIGHUP end the run the way Ctrl-C does: finally clauses stop QEMU.
    _log(f"stopping: {signal.Signals(signum).name}")
    raise SystemExit(128 + signum)


def cmd_fetch(a):
    k = fetch.fetch(a.build_dir)
    print(f"kernel {k['release']} ({k['package']} {k['version']}, via {k['metapackage']} "
          f"{k['metapackage_version']})")
    print(f"boot kernel: {k['boot_kernel']}")
    facts = k["config_facts"]
    print("config: " + ", ".join(f"{n[7:]}={v or 'n'}" for n, v in facts.items()))
    print(f"wrote {Path(a.build_dir or paths.build_dir()) / 'kernel.json'}")
    return 0


def cmd_initramfs(a):
    m = initramfs.build(a.build_dir, a.out)
    print(f"initramfs {m['initramfs']} for kernel {m['kernel_release']}: "
          f"{len(m['files'])} files, modules {' '.join(m['modules'])}")
    return 0


def histogram_table(hist, ncpus):
    """Rows '2^k  count(cpu0)  count(cpu1) ...' from the first to the last non-empty bucket."""
    used = [k for k in range(records.HIST_BUCKETS) if any(hist[str(c)][k] for c in range(ncpus))]
    if not used:
        return ["  (no waits)"]
    lines = ["  cycles   " + "".join(f"{'cpu' + str(c):>10}" for c in range(ncpus))]
    for k in range(used[0], used[-1] + 1):
        lines.append(f"  2^{k:<6} " + "".join(f"{hist[str(c)][k]:>10}" for c in range(ncpus)))
    return lines


def print_result(res):
    m, s, t = res["meta"], res["summary"], res["trailer"]
    print(f"kernel {m['kernel_release']}, {res['accel']}, {m['ncpus']} vCPUs, lock mode "
          f"{res['observed_lock_mode']}; probed {m['symbol'] or '-'} "
          f"{t['probes'].get('kprobes_list_flags', '')}")
    wl = t["workload"]
    rate = wl["ops"] / (wl["busy_ns"] / 1e9) if wl["busy_ns"] else 0
    print(f"workload {wl['name']}: {wl['ops']} x {wl['unit']} ({rate:.2f}/s), "
          f"window {t['window']['ns'] / 1e9:.2f} s")
    print(f"boot: first frame {res['host_to_first_frame_s'] or 0:.2f} s after QEMU started "
          f"(guest uptime {m['uptime_at_start_s']:.2f} s); QEMU ran {res['host_wall_s']:.2f} s")
    print("vCPU threads: " + " ".join(f"{k}={v}" for k, v in res["vcpu_threads"].items()))
    if "probecost" in t:
        print_probecost(t["probecost"])
    host = res.get("host") or {}
    for name, r in (host.get("recorders") or {}).items():
        print(f"spinlab-load {name}: exit status {r['returncode']} ({r['log']})")
    c = host.get("clock")
    if c:
        b = c["bracket_cycles"].get("us") or {}
        fit = c.get("fit") or {}
        print(f"clock: {c['points']} points; bracket median {b.get('median') or 0:.0f} us, p99 "
              f"{b.get('p99') or 0:.0f} us; fitted through {fit.get('points')} points, bound "
              f"median {(fit.get('bound_median_cycles') or 0) / (c['host_tsc_hz'] or 1) * 1e6:.0f}"
              f" us, offset slope {fit.get('offset_slope_ppm') or 0:.1f} ppm")
    if not s:
        return
    g = s.get("gt")
    if g:
        print(f"gt: lock {g['lock']}, {g['holds']} holds ({g['holder_holds']} by the holder on "
              f"cpu {g['holder_cpu']}, median {g['holder_hold_cycles_median']} cycles), dropped "
              f"{g['dropped']}; {g['waits_on_lock']} waits on it, {g['long_waits_on_lock']} long")
    print(f"waits {s['waits']} ({s['waits_per_s']:.1f}/s); >= 2^20 cycles {s['long_waits']} "
          f"({100 * s['long_share']:.2f} %); longest {s['max_cycles']} cycles; nested "
          f"{s['nested_waits']}")
    print(f"unpaired begin/end {s['unpaired_begin']}/{s['unpaired_end']}; lost events "
          f"{s['lost_events']}; probe misses {s['probe_misses']}")
    ab = s.get("ab")
    if ab:
        print(f"A/B over {ab['phases']} phases: traced {ab['traced_ops_per_s']:.2f}, untraced "
              f"{ab['untraced_ops_per_s']:.2f} {wl['unit']}/s, ratio {ab['ratio']:.3f} (pairs "
              + " ".join(f"{x:.2f}" for x in ab["pair_ratios"]) + ")")
    print("per-CPU log2 histogram of wait cycles (bucket k: [2^k, 2^(k+1)), 0 and 1 in 2^0):")
    print("\n".join(histogram_table(s["histograms"], m["ncpus"])))


def print_probecost(pc):
    rounds = pc["rounds"]
    per = sorted((r["probed_cycles"] - r["plain_cycles"]) / pc["calls"] for r in rounds)
    plain = sorted(r["plain_cycles"] / pc["calls"] for r in rounds)
    print(f"probe cost on {pc['symbol']} {pc['kprobes_list_flags']}: {pc['calls']} calls x "
          f"{len(rounds)} rounds; a plain call {plain[len(plain) // 2]:.0f} cycles; the "
          f"kprobe+kretprobe pair adds {per[len(per) // 2]:.0f} cycles (median; "
          f"{per[0]:.0f} to {per[-1]:.0f})")


def cmd_run(a):
    cfg = boot.GuestConfig(kernel=a.kernel, initrd=a.initrd, cpus=a.cpus, memory_mb=a.memory,
                           accel=a.accel, mode=a.mode, workload=a.workload, seconds=a.seconds,
                           trace=not a.no_trace, buffer_kb=a.buffer_kb, hackbench=a.hackbench,
                           workers=a.workers, append=a.append or [], timeout_s=a.timeout,
                           cpu_flags=a.cpu_flags or [], ab_phases=a.ab_phases, gt=a.gt,
                           clock=a.clock, timeline=a.timeline,
                           freeze={"vcpus": a.freeze_vcpus, "freeze_ms": a.freeze_ms,
                                   "period_ms": a.period_ms} if a.freeze_vcpus else None,
                           region=a.region, tsc_spacing=a.tsc_spacing,
                           control_socket=a.control_socket or (f"{a.region}.sock" if a.region else None))
    if a.region:
        region = Path(a.region)
        if region.exists() and not region.is_file():
            print(f"spinlab-linux: --region {region}: not a regular file", file=sys.stderr)
            return 2
        if a.no_trace or a.ab_phases or a.workload == "probecost":
            print("spinlab-linux: --region reads the waits live: it needs tracing, no --ab-phases "
                  "and a workload other than probecost", file=sys.stderr)
            return 2
        if len(cfg.control_socket) > 100:
            print(f"spinlab-linux: the control socket {cfg.control_socket} is longer than a "
                  f"socket path may be: give --control-socket a shorter one", file=sys.stderr)
            return 2
        with open(region, "ab") as f:       # the size QEMU maps; the agent lays it out
            f.truncate(cfg.region_mb << 20)
        print(f"region {region}, control channel {cfg.control_socket}: spinlab-collect "
              f"query|watch|record|info|reset --shm {region} --socket {cfg.control_socket}",
              file=sys.stderr)
    if a.workload == "gt" and not a.gt:
        cfg.gt = "1,2000,1000,200"
    out = Path(a.out or paths.build_dir() / "runs" /
               f"{time.strftime('%Y%m%d-%H%M%S')}-{a.mode}-{a.workload}")
    try:
        res, _ = boot.run_guest(cfg, out, log=_log)
    except (boot.GuestError, clock.ClockError) as e:
        _log(f"error: {e}")
        p = e.partial
        if p is not None:
            _log(f"read before the error: {p.frames} frames, {len(p.waits)} waits")
        return 1
    if a.json:
        print(json.dumps(res, indent=2))
    else:
        print_result(res)
        print(f"wrote {out / 'summary.json'}, {out / 'waits.csv'}")
    return 0


def cmd_check(a):
    data = Path(a.stream).read_bytes()
    try:
        run = records.parse(data)
    except records.StreamError as e:
        print(f"bad stream: {e}", file=sys.stderr)
        print(f"read before it: {e.partial.frames} frames, {len(e.partial.waits)} waits",
              file=sys.stderr)
        return 1
    s = records.summary(run) if run.cpus else None
    if a.json:
        print(json.dumps({"meta": run.meta, "trailer": run.trailer, "summary": s}, indent=2))
        return 0
    print(f"ok: {run.frames} frames, {len(run.waits)} waits, kernel "
          f"{run.meta['kernel_release']}, {run.meta['ncpus']} CPUs, lock mode "
          f"{modes.observed_mode(run.meta)}")
    if s:
        print(f"waits/s {s['waits_per_s']:.1f}; >= 2^20 cycles {s['long_waits']}; lost events "
              f"{s['lost_events']}; unpaired {s['unpaired_begin']}/{s['unpaired_end']}")
        print("\n".join(histogram_table(s["histograms"], run.meta["ncpus"])))
    return 0


def cmd_groundtruth(a):
    ev = groundtruth.evaluate(a.run_dir)
    verdict, reasons = (groundtruth.judge_control if groundtruth.is_control(ev)
                        else groundtruth.judge)(ev)
    if a.json:
        print(json.dumps(dict(ev, verdict=verdict, reasons=reasons), indent=2, default=str))
    else:
        print("\n".join(groundtruth.report_lines(ev, verdict, reasons)))
    return 0 if verdict != "fail" else 1


def cmd_modes(a):
    for accel in ("tcg", "kvm"):
        for mode in modes.MODES:
            try:
                q, k = modes.lock_mode_args(mode, accel)
                print(f"{accel:4} {mode:7} QEMU: {' '.join(q)}   kernel: {' '.join(k) or '-'}")
            except modes.ModeError as e:
                print(f"{accel:4} {mode:7} refused: {e}")
    return 0


def parser():
    p = argparse.ArgumentParser(prog="spinlab-linux", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", help="default build/linux/ ($SPINLAB_LINUX_BUILD)")
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fetch", help="download and unpack the kernel, busybox and workloads",
                       description="Download Debian's current kernel (the version "
                       "linux-image-amd64 depends on), busybox-static and rt-tests with "
                       "apt-get download and unpack them with dpkg -x into build/linux/; "
                       "idempotent. Writes kernel.json and packages.json.")
    f.set_defaults(func=cmd_fetch)
    i = sub.add_parser("initramfs", help="build the agent and the initramfs")
    i.add_argument("--out", help="default build/linux/initramfs.cpio.gz")
    i.set_defaults(func=cmd_initramfs)
    r = sub.add_parser("run", help="boot the guest and record its spinlock waits",
                       description="Boot the Linux guest under QEMU, run a workload with the "
                       "slow-path probes on, and check and write the waits.")
    r.add_argument("--cpus", type=int, default=2, help="vCPUs (default 2)")
    r.add_argument("--memory", type=int, default=512, help="MiB (default 512)")
    r.add_argument("--accel", default="tcg", choices=("tcg", "kvm", "auto"),
                   help="default tcg")
    r.add_argument("--mode", default="tas", choices=modes.MODES,
                   help="lock mode: native (queued), tas (test-and-set fallback, TCG's "
                   "default), pv (KVM only); default tas")
    r.add_argument("--workload", default="hackbench",
                   choices=("hackbench", "forkexec", "idle", "probecost", "gt", "tscread"),
                   help="hackbench (rt-tests, run again until the time is up), forkexec "
                   "(fork/exec and tmpfs loops), idle, probecost (the probe's cost on a "
                   "getppid loop), gt (the ground-truth module: its lock held on one CPU, "
                   "every hold recorded), or tscread (every CPU reads its TSC in a loop, "
                   "--tsc-spacing apart: what TCG's clock does with a guest's reads); default "
                   "hackbench")
    r.add_argument("--tsc-spacing", type=int, metavar="N",
                   help="tscread: ALU iterations between two TSC reads (default 1000)")
    r.add_argument("--seconds", type=float, default=5.0, help="workload time (default 5)")
    r.add_argument("--no-trace", action="store_true",
                   help="run the workload without probes (the untraced baseline)")
    r.add_argument("--buffer-kb", type=int, default=8192,
                   help="trace buffer per CPU in KiB (default 8192)")
    r.add_argument("--hackbench", metavar="GxL", help="hackbench groups x loops (default 2x20)")
    r.add_argument("--workers", type=int, help="forkexec processes (default 2 per vCPU)")
    r.add_argument("--ab-phases", type=int, default=0, metavar="N",
                   help="cut the workload's time into N (even) phases, probes off and on in "
                   "turn, for its throughput traced against untraced within one boot")
    r.add_argument("--gt", metavar="H,HOLD,GAP[,WGAP]",
                   help="workload gt: the holder CPU, its hold and gap in us, the other CPUs' "
                   "gap in us (default 1,2000,1000,200, as the ground-truth test)")
    r.add_argument("--clock", action="store_true",
                   help="the clock port: spinlab-linux-clock pings the guest every 10 ms "
                   "(clock.csv, clock.json)")
    r.add_argument("--timeline", action="store_true",
                   help="run spinlab-load timeline beside the guest (timeline.csv)")
    r.add_argument("--freeze-vcpus", "--preempt-vcpus", dest="freeze_vcpus",
                   type=lambda v: [int(x) for x in v.split(",")], metavar="V[,V...]",
                   help="run spinlab-load freeze freezing these vCPUs (freezes.csv); "
                   "--preempt-vcpus: old name of --freeze-vcpus")
    r.add_argument("--freeze-ms", type=float, default=30, help="freeze: freeze length "
                   "(default 30)")
    r.add_argument("--period-ms", type=float, default=100, help="freeze: one freeze per "
                   "period (default 100)")
    r.add_argument("--region", metavar="FILE",
                   help="spinlab's shared region in FILE (made 16 MiB, kept) and the control "
                        "channel: the agent counts each wait into the region as the wait ends, "
                        "publishes its clock there and answers spinlab's control requests, so "
                        "spinlab-collect query|watch|record|info|reset read the guest")
    r.add_argument("--control-socket", metavar="SOCK",
                   help="with --region: the control channel's socket (default FILE.sock), which "
                        "spinlab-collect's --socket connects to")
    r.add_argument("--append", action="append", metavar="WORD",
                   help="another kernel parameter (repeatable)")
    r.add_argument("--cpu-flags", action="append", metavar="FLAG",
                   help="appended to the mode's -cpu model, e.g. -cx16 (repeatable)")
    r.add_argument("--kernel", help="default kernel.json's boot_kernel")
    r.add_argument("--initrd", help="default build/linux/initramfs.cpio.gz")
    r.add_argument("--timeout", type=float, help="seconds (default 120 + 4 x --seconds)")
    r.add_argument("--out", help="result folder (default build/linux/runs/DATE-MODE-WORKLOAD)")
    r.add_argument("--json", action="store_true", help="print summary.json instead")
    r.set_defaults(func=cmd_run)
    c = sub.add_parser("check", help="check a saved stream and summarize it")
    c.add_argument("stream", help="a stream.bin a run wrote")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_check)
    g = sub.add_parser("groundtruth", help="a gt run's classes against the module's holder",
                       description="Class the long waits of a gt run (clock, timeline, "
                       "freezes) and check them against the holder the ground-truth module "
                       "recorded; prints the figures and a verdict (pass, fail, not judged): "
                       "the issue's bar, or for a control run (the freezes on another vCPU than "
                       "the holder's) the control's. Exit status 1 on fail.")
    g.add_argument("run_dir", help="the run's --out folder")
    g.add_argument("--json", action="store_true")
    g.set_defaults(func=cmd_groundtruth)
    m = sub.add_parser("modes", help="print each lock mode's QEMU and kernel arguments")
    m.set_defaults(func=cmd_modes)
    return p


def main(argv=None):
    a = parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)
    if a.build_dir:
        import os
        os.environ["SPINLAB_LINUX_BUILD"] = a.build_dir
    try:
        return a.func(a)
    except (fetch.FetchError, initramfs.InitramfsError, modes.ModeError, ValueError) as e:
        _log(f"error: {e}")
        return 2
    except KeyboardInterrupt:
        _log("interrupted")
        return 130
    except BrokenPipeError:   # | head
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
