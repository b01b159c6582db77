#!/usr/bin/env bash
# `make run`: the default experiment (the spec named default: experiments/default.ini; another
# with RUN_SPEC, e.g. `make run RUN_SPEC=linux`: experiments/linux.ini), then its report; prints the report's path and results/index.html's. Runs the build tree's `spinlab`
# (build/host/bin), the same command an installation puts on the PATH. Extra arguments go to
# spinlab run (e.g. --run.repetitions 5).
set -euo pipefail
cd "$(dirname "$0")/.."
SPINLAB=build/host/bin/spinlab
if [ ! -x build/host/bin/spinlab-run ]; then
    echo "make run: build/host/bin/spinlab-run is missing: build it with 'make tools'" >&2
    exit 1
fi
status=0
"$SPINLAB" run --spec "${RUN_SPEC:-default}" "$@" || status=$?
if [ ! -e results/latest/meta.json ]; then
    echo "make run: the experiment wrote no results (spinlab run exit status $status)" >&2
    exit "${status/#0/1}"
fi
# A partial run still gets its report (it says what is missing), but make run then fails.
# spinlab report prints the report's path; results/index.html's comes on its stderr.
report=$("$SPINLAB" report results/latest)
echo "report: $report"
if [ "$status" -ne 0 ]; then
    echo "make run: the run is partial (spinlab run exit status $status): see results/latest/status.json" >&2
fi
exit "$status"
