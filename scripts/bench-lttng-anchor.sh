#!/usr/bin/env bash
# The LTTng-UST anchor (docs/trace-cost.md, "Anchor measured in the same run"): what one
# user-space event of the same size costs the writing thread through LTTng-UST, a session
# recording to a file, against spinlab's user-mode logger path (kernel-patch/locktrace/user_ring.h),
# natively on the host, in the same run, as a ratio. Goal: spinlab ahead (ratio > 1).
#
# Each round runs both sides back to back, the order swapped every round:
#   spinlab: build/host/bin/user_ring_benchmark (kernel-patch/locktrace/user_ring_benchmark.cc):
#     lfence; rdtsc, user_ring_write_spinlock into the thread's ring of 1,024 records, and when it
#     is full a system call (getppid stands in for kTraceRingDrain) and user_ring_take through
#     the CPU's Writer into a real-time trace area (128 x 64 KiB, 8 MiB); full buffers are taken
#     (take_buffer) and written to /dev/null by a second thread (drain_thread:1, the ratio's
#     figure) and, in a second benchmark, by the writing thread itself between batches
#     (drain_thread:0); the drain is not in the figure, the take is.
#   LTTng: scripts/lttng-anchor/lttng_anchor.cc, built here against liblttng-ust (2.13 API), writes
#     spinlab_anchor:spinlock (ten 64-bit fields, 80 bytes: spinlab's payload size) from one
#     thread into a session `lttng create --output DIR` with one user-space channel (discard mode,
#     per-user buffers, 8 sub-buffers of 1 MiB per CPU); lttng-consumerd writes it to a file in
#     build/bench. WARMUP untimed events, then EVENTS timed ones. After `lttng stop`, the
#     channel's discarded events come from `lttng list`, the recorded ones from babeltrace2's
#     counter (when babeltrace2 is installed), and the trace is removed.
# Both sides time batches of 10,000 events with lfence; rdtsc in the writing thread, and read the
# thread's CPU time; the JSON holds every round, the medians and LTTng/spinlab of the medians.
#
# Environment: ROUNDS (5), EVENTS (2,000,000 timed LTTng events per round), WARMUP (100,000),
# OUT (build/bench/trace-user-anchor.json), BIN (build/host/bin), KEEP_WORK (set: keep the
# per-round files, traces excepted, in build/bench/lttng-anchor-run.*).
# A session daemon that runs already is used and left running; otherwise this starts one
# (lttng-sessiond --daemonize --no-kernel) and stops it at the end. The session, the daemon it
# started (with its consumer daemons) and the traces are gone after a normal exit, Ctrl-C or
# SIGTERM (the trap below).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
EVENTS=${EVENTS:-2000000}
WARMUP=${WARMUP:-100000}
OUT=${OUT:-build/bench/trace-user-anchor.json}
BIN=${BIN:-build/host/bin}
src=scripts/lttng-anchor
exe_dir=build/bench/lttng-anchor   # the LTTng writer, built here

die() { echo "bench-lttng-anchor: $*" >&2; exit 1; }

for tool in lttng lttng-sessiond; do
    command -v "$tool" >/dev/null || die "'$tool' not found: install Debian's lttng-tools and liblttng-ust-dev (apt-get install lttng-tools liblttng-ust-dev; scripts/deps.sh installs them)"
done
echo '#include <lttng/tracepoint.h>' | ${CC:-gcc} -E -x c - >/dev/null 2>&1 ||
    die "lttng/tracepoint.h not found: install Debian's liblttng-ust-dev (apt-get install liblttng-ust-dev; scripts/deps.sh installs it)"
[ -x "$BIN/user_ring_benchmark" ] ||
    die "$BIN/user_ring_benchmark not built (cmake --build build/host --target user_ring_benchmark, or make bench)"

# The LTTng writer: the provider in C, the loop in C++, the provider linked in statically.
mkdir -p "$exe_dir" "$(dirname "$OUT")"
${CC:-gcc} -O2 -Wall -I"$src" -c "$src/spinlab_anchor_tp.c" -o "$exe_dir/spinlab_anchor_tp.o"
${CXX:-g++} -O2 -Wall -Wextra -std=c++17 -I"$src" "$src/lttng_anchor.cc" "$exe_dir/spinlab_anchor_tp.o" \
    -o "$exe_dir/lttng_anchor" -llttng-ust -ldl

# --- what this script starts, and its removal ------------------------------------------------
work=$(mktemp -d build/bench/lttng-anchor-run.XXXXXX)
session=""
sessiond_pid=""
shm_before=$(ls /dev/shm 2>/dev/null | grep '^lttng-ust-wait-' || true)

descendants() {  # every process below $1
    local c
    for c in $(pgrep -P "$1" 2>/dev/null); do echo "$c"; descendants "$c"; done
}
cleanup() {
    set +e
    if [ -n "$session" ]; then
        # --no-wait: its trace is thrown away, and a writer killed inside an event leaves a
        # sub-buffer that never completes, which a plain destroy would wait for forever.
        timeout 20 lttng destroy --no-wait "$session" >/dev/null 2>&1
        session=""
    fi
    if [ -n "$sessiond_pid" ] && kill -0 "$sessiond_pid" 2>/dev/null; then
        local kids
        kids=$(descendants "$sessiond_pid")
        kill -TERM "$sessiond_pid" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$sessiond_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$sessiond_pid" 2>/dev/null
        for k in $kids; do kill -0 "$k" 2>/dev/null && kill -KILL "$k" 2>/dev/null; done
        sessiond_pid=""
    fi
    [ -n "${KEEP_WORK:-}" ] && echo "bench-lttng-anchor: work files kept in $work" >&2 || rm -rf "$work"
    # The wait files LTTng-UST applications create in /dev/shm, if none was there before.
    for f in $(ls /dev/shm 2>/dev/null | grep '^lttng-ust-wait-'); do
        grep -qx "$f" <<<"$shm_before" || rm -f "/dev/shm/$f"
    done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if lttng list >/dev/null 2>&1; then
    echo "bench-lttng-anchor: using the session daemon that runs already (left running)"
else
    lttng-sessiond --daemonize --no-kernel >/dev/null 2>&1 || die "lttng-sessiond did not start"
    if [ "$(id -u)" -eq 0 ]; then pidfile=/var/run/lttng/lttng-sessiond.pid; else pidfile=$HOME/.lttng/lttng-sessiond.pid; fi
    sessiond_pid=$(cat "$pidfile" 2>/dev/null || true)
    [ -n "$sessiond_pid" ] || die "lttng-sessiond started but left no $pidfile"
fi

load_start=$(cut -d' ' -f1-3 /proc/loadavg)

spinlab_round() {
    "$BIN/user_ring_benchmark" --benchmark_filter=BM_UserRingSpinlockEvent \
        --benchmark_out="$work/spinlab-$1.json" --benchmark_out_format=json >"$work/spinlab-$1.txt" 2>&1 ||
        { cat "$work/spinlab-$1.txt" >&2; die "user_ring_benchmark failed"; }
}
lttng_round() {
    local r=$1 trace="$work/trace-$1"
    session="spinlab-anchor-$$-$r"
    lttng create "$session" --output "$trace" >/dev/null
    lttng enable-channel --session "$session" --userspace --subbuf-size=1M --num-subbuf=8 anchor >/dev/null
    lttng enable-event --session "$session" --userspace --channel anchor 'spinlab_anchor:*' >/dev/null
    lttng start "$session" >/dev/null
    "$exe_dir/lttng_anchor" "$EVENTS" "$WARMUP" >"$work/lttng-$r.json"
    timeout 120 lttng stop "$session" >"$work/lttng-stop-$r.txt" 2>&1 ||
        { cat "$work/lttng-stop-$r.txt" >&2; die "lttng stop failed or did not finish in 120 s"; }
    lttng list "$session" >"$work/lttng-list-$r.txt" 2>&1
    timeout 120 lttng destroy "$session" >/dev/null || die "lttng destroy failed or did not finish in 120 s"
    session=""
    if command -v babeltrace2 >/dev/null; then
        babeltrace2 "$trace" -c sink.utils.counter -p step=+0 >"$work/lttng-count-$r.txt" 2>&1 || true
    fi
    du -sb "$trace" | cut -f1 >"$work/lttng-bytes-$r.txt"
    rm -rf "$trace"
}

for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) -eq 1 ]; then spinlab_round "$r"; lttng_round "$r"; else lttng_round "$r"; spinlab_round "$r"; fi
    echo "bench-lttng-anchor: round $r of $ROUNDS done"
done

load_end=$(cut -d' ' -f1-3 /proc/loadavg)
meta=$(/usr/bin/python3 - "$load_start" "$load_end" "$EVENTS" "$WARMUP" <<'EOF'
import json, os, platform, subprocess, sys, time
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
def out(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
    except OSError:
        return None
ust = out("dpkg-query", "-W", "-f=${Version}", "liblttng-ust-dev")
print(json.dumps({
    "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    "host_cpu": cpu, "host_cpus": os.cpu_count(), "host_kernel": platform.release(),
    "clocksource": open("/sys/devices/system/clocksource/clocksource0/current_clocksource").read().strip(),
    "load_average_start": [float(x) for x in sys.argv[1].split()],
    "load_average_end": [float(x) for x in sys.argv[2].split()],
    "lttng_version": out("lttng", "--version"), "lttng_ust_version": ust,
    "lttng_channel": {"domain": "userspace", "buffering": "per-user", "event_loss_mode": "discard",
                      "subbuf_size": 1 << 20, "num_subbuf": 8, "output": "a file in build/bench"},
    "lttng_events_timed_per_round": int(sys.argv[3]), "lttng_warmup_per_round": int(sys.argv[4]),
    "spinlab_ring": {"capacity": 1024, "buffers": 128, "buffer_size": 65536, "mode": "real-time"},
}))
EOF
)
/usr/bin/python3 "$src/anchor_json.py" --work "$work" --rounds "$ROUNDS" --out "$OUT" --meta "$meta"
