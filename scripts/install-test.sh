#!/usr/bin/env bash
# The install test (a step of `make test`, about a minute): `make install` into a temporary
# DESTDIR, then, from another directory and with the source tree hidden, the installed
# `spinlab selftest`, a 10-second `spinlab run` + `spinlab report` and the Python API on its
# results; then `make uninstall`.
#
# "Nothing reads the source tree" is checked twice: the installed tools run in a private mount
# namespace where a read-only empty tmpfs covers the source tree (so a tool that needs it fails),
# under strace (file and exec system calls of every process, QEMU included), whose log must not
# name the source tree at all (so a tool that merely looks there and falls back fails too).
# Needs root (mount namespace, and the run's cgroups and tracefs), strace and man.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
prefix=/usr/local
stage=$(mktemp -d /tmp/spinlab-install-test.XXXXXX)
trap 'rm -rf "$stage"' EXIT
root=$stage/root
bin=$root$prefix/bin
fail() { echo "install test: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || fail "needs root (a mount namespace hides the source tree; the run needs cgroups)"
for tool in strace man unshare; do
    command -v $tool >/dev/null || fail "$tool is missing (scripts/deps.sh installs it)"
done

# A file that is not ours, in a directory we install into: it must survive both steps.
mkdir -p "$bin"
echo keep >"$bin/not-spinlab"

make -s --no-print-directory install DESTDIR="$root" PREFIX=$prefix >"$stage/install.log" 2>&1 ||
    { cat "$stage/install.log"; fail "make install DESTDIR=$root failed"; }
tail -1 "$stage/install.log"

# /usr/bin/python3 finds the analysis package (import spinlab_report) through spinlab.pth.
pth=$(/usr/bin/python3 -c 'import sys; print(next(d for d in sys.path if d.startswith(sys.argv[1] + "/") and d.endswith("-packages")))' "$prefix")/spinlab.pth
[ "$(cat "$root$pth" 2>/dev/null)" = "$prefix/share/spinlab/analysis" ] ||
    fail "$pth is missing or does not name $prefix/share/spinlab/analysis"
# Everything the Python tools import is installed (their file lists are explicit).
for pkg in vm-images/spinlab_vm analysis/spinlab_report; do
    for f in "$pkg"/*.py; do
        [ -f "$root$prefix/share/spinlab/$f" ] ||
            fail "$f is not installed: add it to the module list in frontend/CMakeLists.txt"
    done
done
for t in spinlab spinlab-run spinlab-collect spinlab-load spinlab-vm spinlab-report spinlab-selftest spinlab-sweep; do
    [ -x "$bin/$t" ] || fail "$bin/$t is missing"
    man --manpath="$root$prefix/share/man" "$t" 2>/dev/null | grep -q "^NAME" ||
        fail "man $t: no page under $root$prefix/share/man"
    [ -e "$root$prefix/share/bash-completion/completions/$t" ] || fail "no bash completion for $t"
done
# Bash completion of the subcommands, as bash would ask for it.
got=$(bash -c "source '$root$prefix/share/bash-completion/completions/spinlab'
               COMP_WORDS=('$bin/spinlab' re); COMP_CWORD=1; _spinlab; echo \"\${COMPREPLY[*]}\"")
[ "$got" = report ] || fail "completing 'spinlab re' gave '$got', not 'report'"

# From another directory, with a clean environment and the source tree hidden.
work=$stage/work
mkdir -p "$work"
cat >"$stage/isolated.sh" <<INNER
set -euo pipefail
spinlab help | grep -q "^  selftest"
spinlab version | grep -q "^spinlab [0-9]"
if spinlab rnu 2>err.txt; then exit 1; fi
grep -q "did you mean 'spinlab run'" err.txt
spinlab run --help | grep -q -- "--spec NAME|FILE"
spinlab sweep sweep-locks --dry-run >sweep.txt
spinlab sweep mitigations --dry-run >mitigations.txt
grep -q "^sweep mitigations: 48 cells" mitigations.txt
spinlab run --spec wrk --dry-run >wrk.txt
grep -q " clock=cpuid pause=on long-wait=1048576 timing=all " wrk.txt
grep -q "lock-tas_cpus-2: .*/bin/spinlab-run --spec .*--vm.lock tas --vm.cpus 2" sweep.txt
spinlab selftest --cpus 2 --suite smp,user --accel tcg >selftest.txt
spinlab run --vm.name install-test-\$\$ --vm.accel tcg --run.phases idle-host --run.duration 8 --run.warmup 2 \
    --run.repetitions 1 >run.txt 2>&1 || { cat run.txt; exit 1; }
spinlab report results/latest >report.txt
# the public API of the installed package, as spinlab.pth puts it on the path (the .pth names
# $prefix without the DESTDIR: here the staged copy is named directly)
PYTHONPATH=$root$prefix/share/spinlab/analysis /usr/bin/python3 -c "import spinlab_report as s
r = s.load('results/latest'); print(len(r.waits), sorted(r.classes.lock_class.unique()))" >api.txt
INNER
# Hidden first, then traced from the other directory: the log holds the tools' calls only.
(cd "$work" && env -i PATH="$bin:/usr/sbin:/usr/bin:/sbin:/bin" HOME="$stage" LANG=C.UTF-8 \
    unshare --mount --propagation private sh -c '
        mount -t tmpfs -o ro,size=4k spinlab-source-hidden "$1" && shift &&
        exec strace -f -qq --seccomp-bpf -e trace=%file,%process -o "$@"' \
    - "$src" "$stage/strace.log" bash "$stage/isolated.sh") || {
        tail -20 "$work"/*.txt 2>/dev/null
        fail "the installed tools failed with the source tree hidden (output above)"
    }

if grep -F "$src" "$stage/strace.log" | head -5 | grep .; then
    fail "the installed tools looked into the source tree $src (strace lines above)"
fi
grep -q "share/spinlab/kernel/spinlab.elf" "$stage/strace.log" ||
    fail "nothing opened the installed kernel (strace log: $stage/strace.log)"
grep -q '"state": *"complete"' "$work/results/latest/status.json" ||
    fail "the run is not complete: $(cat "$work/results/latest/status.json")"
[ "$(cat "$work/report.txt")" = "$work/results/latest/report.html" ] && [ -s "$work/report.txt" ] ||
    fail "spinlab report printed '$(cat "$work/report.txt")'"
grep -q "^[0-9]* \[.*'sched'" "$work/api.txt" || fail "the installed API gave '$(cat "$work/api.txt")'"
run_id=$(basename "$(readlink "$work/results/latest")")
grep -q "href='$run_id/report.html'" "$work/results/index.html" ||
    fail "results/index.html has no link to $run_id/report.html"

make -s --no-print-directory uninstall DESTDIR="$root" PREFIX=$prefix
left=$(cd "$root" && find . ! -type d ! -path "./usr/local/bin/not-spinlab")
[ -z "$left" ] || fail "make uninstall left: $left"
[ -f "$bin/not-spinlab" ] || fail "make uninstall removed a file it did not install"
[ ! -e "$root$prefix/share/spinlab" ] || fail "make uninstall left $prefix/share/spinlab"
echo "install test: installed, ran selftest and a 10 s run from $work with the source tree hidden" \
     "(nothing opened it), report and index written, uninstalled cleanly"
