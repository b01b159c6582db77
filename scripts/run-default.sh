#!/usr/bin/env bash
# `make run`: the default experiment (experiments/default.ini), then its report; prints the
# report's path. Extra arguments go to spinlab-run (e.g. --run.repetitions 5).
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=build/host/bin/spinlab-run
if [ ! -x "$RUN" ]; then
    echo "make run: $RUN is missing: build it with 'make build'" >&2
    exit 1
fi
status=0
"$RUN" --spec experiments/default.ini "$@" || status=$?
if [ ! -e results/latest/meta.json ]; then
    echo "make run: the experiment wrote no results (spinlab-run exit status $status)" >&2
    exit "${status/#0/1}"
fi
# A partial run still gets its report (it says what is missing), but make run then fails.
report=$(analysis/spinlab-report results/latest)
echo "$report"
if [ "$status" -ne 0 ]; then
    echo "make run: the run is partial (spinlab-run exit status $status): see results/latest/status.json" >&2
fi
exit "$status"
