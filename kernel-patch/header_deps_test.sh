#!/bin/bash
# kernel-patch/header_deps_test.sh SRC_DIR WORK_DIR: a header change rebuilds the kernel objects
# that include it, also when the compiler is handed the object under another spelling of its
# path. ccache with CCACHE_BASEDIR (how the team builds: one cache for every worktree) does
# that: it hashes -o relative, and a hit returns the dependency file of whichever build stored
# it, naming the object as that build did (seen: every .d of a fresh worktree's kernel began
# "../build/kernel/..."). Unless the Makefile names the target itself (-MT $@), make never
# applies such a file, no header change rebuilds anything, and a kernel gets linked from
# objects built against two layouts of one struct (the lockstat reset IPIs of such a kernel went
# unanswered and its control channel stopped answering).
# The compiler here is g++ behind a wrapper that passes -o relative, as such a build did. The
# test copies SRC_DIR (kernel-patch) to a fresh folder under WORK_DIR, builds kern/prcb.cc.o,
# then plays a change of kern/prcb.h (make -W) and expects the object rebuilt.
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 SRC_DIR WORK_DIR" >&2
    exit 2
fi
src=$(realpath "$1")
mkdir -p "$2"
t=$(mktemp -d "$(realpath "$2")/header-deps.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$t"' EXIT
cp -r "$src" "$t/kernel-patch"
cat >"$t/cxx" <<'WRAP'
#!/bin/bash
args=()
prev=
for a in "$@"; do
    if [ "$prev" = -o ]; then a=$(realpath -m --relative-to=. "$a"); fi
    args+=("$a")
    prev=$a
done
exec g++ "${args[@]}"
WRAP
chmod +x "$t/cxx"
obj="$t/build/kern/prcb.cc.o"
mk() { make --no-print-directory -s -C "$t/kernel-patch" O="$t/build" CXX="$t/cxx" "$@" "$obj"; }

mk >/dev/null
again=$(mk)
if [ -n "$again" ]; then
    echo "FAIL: a second build with nothing changed rebuilt: $again" >&2
    exit 1
fi
after=$(mk -W kern/prcb.h)
if ! grep -q "CXX *kern/prcb.cc" <<<"$after"; then
    echo "FAIL: kern/prcb.h changed (make -W) and kern/prcb.cc.o was not rebuilt;" \
         "its dependency file begins: $(head -c 120 "$t/build/kern/prcb.cc.d")" >&2
    exit 1
fi
echo "ok: kern/prcb.cc.o rebuilt after kern/prcb.h changed (compiler given a relative -o)"
