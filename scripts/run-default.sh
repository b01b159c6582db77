#!/usr/bin/env bash
# `make run`: the default experiment (experiments/default.ini) and its report.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x build/host/bin/spinlab-run ]; then
    echo "make run: the experiment runner (spinlab-run) is not part of this build yet;" >&2
    echo "make run: the kernel can be booted with 'make qemu' and tested with 'make test'." >&2
    exit 1
fi
build/host/bin/spinlab-run --spec experiments/default.ini
