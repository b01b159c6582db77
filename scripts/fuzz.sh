#!/usr/bin/env bash
# The libFuzzer targets (frame decoder, shared-region header parser, trace file reader, stack
# decoder), each for SECONDS.
# make test runs them 20 s each; make fuzz longer (FUZZ_SECONDS).
set -euo pipefail
cd "$(dirname "$0")/.."
exec kernel-patch/fuzz.sh "${1:-20}" build/fuzz
