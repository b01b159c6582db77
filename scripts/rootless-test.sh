#!/usr/bin/env bash
# The rootless test (a step of `make test`, about 2.5 minutes on 2 cores under TCG): spinlab as an
# ordinary user. As root it creates a user (useradd; removed again at exit, also on failure, with
# every process and /dev/shm file it left), installs spinlab into a temporary DESTDIR the user may
# read, and as that user, from its home, with XDG_RUNTIME_DIR set as a login would set it:
#   - `spinlab run`, the default spec shortened (2 repetitions of 3 s): every repetition kept,
#     host load in effect (the hogs' logs), a timeline (from perf switch records: tracefs is
#     closed to the user; meta.json's timeline_source says so), nothing left in the run directory;
#   - `spinlab lab start 1` + `spinlab lab check 1`, and the same for labs 3 and 5 (reduced; their
#     results are copied into $SPINLAB_TEST_LAB_RUNS when it is set, for make test's labs step);
#   - `spinlab lab start 2` runs (a cgroup the user may write) or refuses before starting, with
#     the privilege its freeze needs named, and without a Python traceback.
# Before that, without XDG_RUNTIME_DIR and /run/user/<uid>: the run directory under TMPDIR (made
# 0700), and a planted one refused by `spinlab run` before it makes anything.
# KVM only when the user may open /dev/kvm (`auto`); here it may not: TCG.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=/usr/local
fail() { echo "rootless test: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "needs root (it creates the ordinary user it runs as)"
for tool in useradd userdel setpriv pgrep; do command -v $tool >/dev/null || fail "$tool is missing"; done

user=slrootless$$
stage=$(mktemp -d /tmp/spinlab-rootless-test.XXXXXX)
uid=
cleanup() {
    if [ -n "$uid" ]; then
        for pid in $(pgrep -u "$uid" || true); do kill -KILL "$pid" 2>/dev/null || true; done
        find /dev/shm -maxdepth 1 -user "$uid" -delete 2>/dev/null || true
        rm -rf "/run/user/$uid"
    fi
    id "$user" >/dev/null 2>&1 && userdel "$user" 2>/dev/null
    rm -rf "$stage"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

root=$stage/root
make -s --no-print-directory install DESTDIR="$root" PREFIX=$prefix >"$stage/install.log" 2>&1 ||
    { cat "$stage/install.log"; fail "make install DESTDIR=$root failed"; }
chmod 755 "$stage"
bin=$root$prefix/bin
home=$stage/home
useradd --no-create-home --home-dir "$home" --shell /bin/bash --user-group "$user"
uid=$(id -u "$user")
# Before the user has a /run/user/<uid> (ssh without a login manager: no XDG_RUNTIME_DIR either):
# the run directory is <TMPDIR>/spinlab-<uid>, made 0700 for the user; one planted there by root
# makes `spinlab run` refuse in one sentence before it makes a results directory (under a second).
if [ ! -e "/run/user/$uid" ]; then
    tmp=$stage/tmp
    mkdir -m 1777 "$tmp"
    no_login() { (cd "$tmp" && setpriv --reuid="$uid" --regid="$uid" --init-groups \
        env -i PATH="$bin:/usr/sbin:/usr/bin:/sbin:/bin" HOME="$tmp" TMPDIR="$tmp" "$@"); }
    [ "$(no_login spinlab-load run-dir)" = "$tmp/spinlab-$uid" ] || fail "no login: run dir $(no_login spinlab-load run-dir)"
    [ "$(stat -c %U:%a "$tmp/spinlab-$uid")" = "$user:700" ] || fail "no login: $(ls -ld "$tmp/spinlab-$uid")"
    rmdir "$tmp/spinlab-$uid"
    mkdir -m 755 "$tmp/spinlab-$uid"
    if no_login spinlab run --run.repetitions 1 --run.duration 2 >"$stage/planted.txt" 2>&1; then
        cat "$stage/planted.txt"; fail "spinlab run used a run directory root planted"
    fi
    grep -q "^spinlab-run: refusing the run directory $tmp/spinlab-$uid: it is owned by root (uid 0)" "$stage/planted.txt" ||
        { cat "$stage/planted.txt"; fail "the planted run directory was not refused in so many words"; }
    [ ! -e "$tmp/results" ] || fail "spinlab run made $tmp/results before refusing the planted run directory"
    echo "rootless test: no XDG_RUNTIME_DIR, no /run/user/$uid: run dir $tmp/spinlab-$uid (0700); a planted one refused first"
fi
mkdir -p "$home" "/run/user/$uid"
chown "$user:$user" "$home" "/run/user/$uid"
chmod 700 "/run/user/$uid"

cat >"$stage/as-user.sh" <<'INNER'
set -euo pipefail
say() { echo "rootless test (as $(id -un), ${SECONDS} s): $*"; }
fail() { echo "rootless test (as $(id -un)): $*" >&2; exit 1; }
busy_host() { tr -s ' \n' '  ' <"$1" | grep -q "rerun on a quiet machine"; }  # the checker's words, unwrapped
no_traceback() { ! grep -q "^Traceback" "$1" || { cat "$1"; fail "a Python traceback reached the user ($1)"; }; }
[ "$(id -u)" -ne 0 ] || fail "runs as root"
[ "$(spinlab-load run-dir)" = "$XDG_RUNTIME_DIR/spinlab" ] || fail "run dir is $(spinlab-load run-dir)"
# Without XDG_RUNTIME_DIR (ssh without a login manager) the login's /run/user/<uid> is found
[ "$(env -u XDG_RUNTIME_DIR spinlab-load run-dir)" = "$XDG_RUNTIME_DIR/spinlab" ] ||
    fail "without XDG_RUNTIME_DIR the run dir is $(env -u XDG_RUNTIME_DIR spinlab-load run-dir)"

spinlab run --run.repetitions 2 --run.duration 3 --run.warmup 1 --trace.enable none >run.txt 2>&1 ||
    { cat run.txt; fail "spinlab run failed"; }
no_traceback run.txt
r=results/latest
grep -q '"state": *"complete"' $r/status.json || { cat run.txt; fail "run not complete: $(cat $r/status.json)"; }
n=$(ls $r/snapshots/*-r[0-9]*.json | wc -l)
[ "$n" -eq 4 ] || fail "$n snapshots, not 4 (2 phases x 2 repetitions)"
for rep in 1 2; do
    grep -q "^hog: [0-9]* process(es)" $r/logs/host-load-r$rep.log ||
        fail "no host load in host-load r$rep: $(cat $r/logs/host-load-r$rep.log)"
done
grep -q '"timeline_source": *"perf"' $r/meta.json || fail "meta.json: $(grep timeline_source $r/meta.json)"
for phase in idle-host host-load; do for rep in 1 2; do
    grep -q "^[0-9]*,[0-9]*,on,.*,$phase,$rep," $r/timeline.csv || fail "timeline.csv: no on rows of $phase r$rep"
done; done
grep -q "source perf" $r/logs/timeline-host-load-r1.log || fail "the timeline log does not name its source"
[ -z "$(ls -A "$XDG_RUNTIME_DIR/spinlab/vm" 2>/dev/null)" ] || fail "left in the run directory: $(ls "$XDG_RUNTIME_DIR/spinlab/vm")"
say "spinlab run: 4 of 4 repetitions, host load, timeline from perf switch records"

# Labs 3 and 5 at labs/tests/test_real_runs.py's REDUCED_COUNTS (make test's labs step checks
# these same runs, kept in SPINLAB_TEST_LAB_RUNS)
counts=(--run.duration 2 --run.warmup 1 --run.repetitions 1 --run.clock-samples 2 --run.timeline off --trace.enable none)
for lab in 1 3 5; do
    # Labs 3 and 5 without their reports (8 runs, ~5 s of figures each): lab 1 makes its report
    # as this user; the checks read the runs, not the reports.
    extra=(--no-report -- "${counts[@]}")
    [ $lab = 1 ] && extra=(-- --run.duration 3 --run.warmup 1 --run.repetitions 1)
    spinlab lab start $lab --out labs "${extra[@]}" >lab$lab.txt 2>&1 || { cat lab$lab.txt; fail "lab start $lab failed"; }
    no_traceback lab$lab.txt
    dir=$(sed -n "s/^lab $lab results: //p" lab$lab.txt)
    if spinlab lab check $lab "$dir" >check$lab.txt 2>&1; then
        say "lab $lab: $(tail -1 check$lab.txt)"
    elif busy_host check$lab.txt; then
        # As labs/tests/test_real_runs.py: other work kept the "idle" host busy (the checker
        # measured it from the timeline and says so); the lab ran, its numbers are not judged.
        say "lab $lab ran; its check is not judged: other programs kept the idle host busy ($(tail -1 check$lab.txt))"
    elif [ "$(grep -c '\[NOT shown\]' check$lab.txt)" = 1 ] && grep -q '\[NOT shown\] quiet baseline' check$lab.txt; then
        # Lab 1 at this reduced size (one 3 s repetition): an idle host's own tail of waits >= 2^22
        # can pass the baseline's 5 % (6.6 % in a clean-clone CI run, vCPUs off only 6.5 %). That
        # is the host's quietness, which this test does not judge; every other observation is.
        say "lab $lab: every observation shown but the quiet baseline, which this host's idle tail decides ($(grep -A3 'quiet baseline' check$lab.txt | tail -1 | tr -s ' '))"
    elif [ "$(grep -c '\[NOT shown\]' check$lab.txt)" = 1 ] && grep -q '\[NOT shown\] no overcommit' check$lab.txt; then
        # Lab 5's idle-host speed against tas: these runs have no timeline, so whether the host
        # was idle is not known, and labs/tests/test_real_runs.py does not judge it then either
        # (a CI run saw student at 0.47x tas with other work on the host; 1.01x on a quiet one).
        say "lab $lab: every observation shown but 'no overcommit', an idle-host speed these runs (no timeline) cannot show was idle ($(grep -A4 'no overcommit' check$lab.txt | tail -1 | tr -s ' '))"
    else
        cat check$lab.txt; fail "lab check $lab failed"
    fi
done

if spinlab lab start 2 --out labs -- --run.duration 3 --run.warmup 1 --run.repetitions 1 >lab2.txt 2>&1; then
    dir=$(sed -n "s/^lab 2 results: //p" lab2.txt)
    spinlab lab check 2 "$dir" >check2.txt 2>&1 || busy_host check2.txt ||
        { cat check2.txt; fail "lab 2 ran but its check failed"; }
    say "lab 2 ran: $(tail -1 check2.txt)"
else
    no_traceback lab2.txt
    tr -s ' \n' '  ' <lab2.txt |
        grep -q "phase freeze-30ms freezes vCPUs through a cgroup, and user $(id -un) may not create one in" ||
        { cat lab2.txt; fail "lab 2 failed without naming what its freeze needs"; }
    ! compgen -G "labs/lab2-*" >/dev/null || fail "lab 2 refused after it had started: $(ls -d labs/lab2-*)"
    say "lab 2 refused before starting: $(grep -o 'phase freeze.*' lab2.txt)"
fi
INNER
chmod 755 "$stage/as-user.sh"

start=$SECONDS
# The perf-only timeline against root's tracefs one, of the same thread at the same time (a
# busy loop of the user's that sleeps 10 ms in turn, ~100 switches a second): the user's on-CPU
# time within 2 % of the 4 s window of root's, as many switch-ins within 3 % (or 5), and at least 50
# under tracefs (the premise).
as_user() { setpriv --reuid="$uid" --regid="$uid" --init-groups "$@"; }
setpriv --reuid="$uid" --regid="$uid" --init-groups sh -c 'trap "exit 0" TERM; while :; do i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; sleep 0.01; done' &
target=$!
sleep 0.5
load=$bin/spinlab-load
"$load" timeline --tid $target --duration 4 --out "$stage/root.csv" 2>"$stage/root.err" &
as_user env XDG_RUNTIME_DIR="/run/user/$uid" "$load" timeline --tid $target --duration 4 --out "$stage/home/user.csv" \
    2>"$stage/user.err" || { cat "$stage/user.err"; fail "the user's timeline failed"; }
wait $! || { cat "$stage/root.err"; fail "root's timeline failed"; }
kill $target; wait $target 2>/dev/null || true
grep -q "source perf" "$stage/user.err" || { cat "$stage/user.err"; fail "the user's timeline does not say it used perf"; }
grep -q "source sched_switch" "$stage/root.err" || { cat "$stage/root.err"; fail "root's timeline did not use tracefs"; }
/usr/bin/python3 - "$stage/root.csv" "$stage/home/user.csv" <<'PY' || fail "the perf timeline disagrees with tracefs's"
import csv, sys
def totals(path):
    on = total = ins = 0
    for r in csv.DictReader(open(path)):
        d = int(r["end_ns"]) - int(r["start_ns"])
        total += d
        if r["state"] == "on":
            on += d
            ins += 1
    return on, total, ins
(ron, rtot, rins), (uon, utot, uins) = totals(sys.argv[1]), totals(sys.argv[2])
print(f"rootless test: one thread, 4 s: on {ron / 1e6:.1f} ms in {rins} runs (tracefs, root), "
      f"{uon / 1e6:.1f} ms in {uins} runs (perf, the user)")
assert rins >= 50, f"{rins} switch-ins under tracefs: the premise (a switching thread) did not hold"
assert abs(rins - uins) <= max(5, 0.03 * rins), f"switch-ins differ: {rins} (tracefs) against {uins} (perf)"
assert abs(ron - uon) <= 0.02 * rtot, f"on-CPU time differs by {abs(ron - uon) / 1e6:.1f} ms"
PY
(cd "$home" && setpriv --reuid="$uid" --regid="$uid" --init-groups \
    env -i PATH="$bin:/usr/sbin:/usr/bin:/sbin:/bin" HOME="$home" USER="$user" LANG=C.UTF-8 \
        XDG_RUNTIME_DIR="/run/user/$uid" bash "$stage/as-user.sh") ||
    fail "as the ordinary user $user (output above)"
if [ -n "${SPINLAB_TEST_LAB_RUNS:-}" ]; then  # make test's labs step checks these (test-all.sh)
    cp -a "$home"/labs/lab3-* "$home"/labs/lab5-* "$SPINLAB_TEST_LAB_RUNS"/ ||
        fail "could not keep labs 3 and 5's runs in $SPINLAB_TEST_LAB_RUNS"
fi
echo "rootless test: as user $user (uid $uid): spinlab run kept every repetition with host load and a" \
     "perf timeline; labs 1, 3, 5 started and checked; lab 2 ran or refused first ($((SECONDS - start)) s)"
