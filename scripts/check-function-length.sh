#!/usr/bin/env bash
# Fails when a C++ function outside the test code is longer than 80 lines (issue 53: a function
# should read as one idea; past a screenful it rarely does). Prints one line per offender,
# "LINES FILE:LINE FUNCTION", longest first. Run by `make test` (scripts/test-all.sh).
# Usage: scripts/check-function-length.sh [MAX_LINES]   (default 80)
#
# The lengths are universal-ctags' (scripts/deps.sh installs it): a function's `end:` line less
# its first line, plus one, comments and blank lines inside it included.
#
# Test code is exempt, named here so the exemption is deliberate rather than a side effect of the
# file list: *_test.cc and the tests/ directories; *_fuzzer.cc (libFuzzer harnesses) and
# *_benchmark.cc (Google Benchmark programs), which check and time the code instead of being it;
# and collector/testing/, which holds only what the tests build on (the fake guest that the
# integration tests and the collector's benchmark drive, the in-memory region of the region
# tests, and trace_script, which writes the export and analysis tests' traces): none of it is
# installed, in spinlab-tools, or run by an experiment.
set -euo pipefail
cd "$(dirname "$0")/.."
max=${1:-80}

if ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
    echo "check-function-length: needs universal-ctags (scripts/deps.sh installs it)" >&2
    exit 2
fi

files=$(git ls-files '*.cc' '*.h' | grep -Ev '(_test|_fuzzer|_benchmark)\.cc$|(^|/)tests/|^collector/testing/' || true)
long=$(echo "$files" | xargs ctags --c++-kinds=f --kinds-c=f --fields=+ne -o - 2>/dev/null |
    awk -F'\t' -v max="$max" '{
        start = 0; end = 0
        for (i = 4; i <= NF; i++) {
            if ($i ~ /^line:/) start = substr($i, 6)
            if ($i ~ /^end:/) end = substr($i, 5)
        }
        if (end - start + 1 > max) printf "%d %s:%d %s\n", end - start + 1, $2, start, $1
    }' | sort -rn)

if [ -n "$long" ]; then
    echo "functions over $max lines (split each into functions that read as one idea):"
    echo "$long"
    echo "check-function-length: $(echo "$long" | wc -l) functions over $max lines" >&2
    exit 1
fi
echo "check-function-length: no function outside the tests is over $max lines"
