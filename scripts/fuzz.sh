#!/usr/bin/env bash
# The libFuzzer targets, each for SECONDS: kernel-patch/fuzz.sh's (frame decoder, shared-region
# header parser, trace file reader, stack decoder), then the hostile-region fuzzer
# (collector/hostile_region_fuzzer.cc: a guest thread rewrites a live region while the host's
# region reader, snapshot code and trace drain read it), all with clang, ASan and UBSan.
# make test runs them 5 s each (the sanitizer builds and a short search from an empty corpus, as a
# check); make fuzz searches longer (FUZZ_SECONDS, 300 s each).
# Exit status: 0 when no target found a crash; the crashing input is left in build/fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
out=$(realpath -m build/fuzz)
kernel-patch/fuzz.sh "$secs" "$out"

kp=kernel-patch
col=collector
target=hostile_region_fuzzer
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -pthread \
    -I "$kp" -I "$kp/abi" -I "$col" -I . \
    "$col/$target.cc" hostlib/mapped_region.cc "$col/region_reader.cc" "$col/snapshot.cc" "$col/report_format.cc" \
    hostlib/json_writer.cc "$col/trace/trace_recorder.cc" \
    "$kp/channel/region_header.cc" "$kp/channel/clock_area.cc" "$kp/channel/crc32c.cc" \
    "$kp/locktrace/drain.cc" "$kp/locktrace/trace_session.cc" "$kp/locktrace/buffer_parser.cc" \
    "$kp/locktrace/trace_file.cc" "$kp/locktrace/writer.cc" \
    "$kp/lockstat/perf_record.cc" "$kp/lockstat/log2_table.cc" "$kp/lib/format.cc" \
    -o "$out/$target"
corpus=$out/corpus-$target
mkdir -p "$corpus"
echo "fuzz: $target for ${secs}s" >&2
# An input is setup bytes and up to 64 short edits (see the fuzzer's header).
(cd "$out" && "./$target" -max_total_time="$secs" -max_len=1300 -len_control=0 -print_final_stats=1 \
    "$corpus" 2> "$out/$target.log") || {
  echo "fuzz: $target FAILED, see $out/$target.log" >&2
  tail -40 "$out/$target.log" >&2
  exit 1
}
grep -E "^stat::number_of_executed_units" "$out/$target.log" >&2 || true
echo "fuzz: $target: no crashes" >&2
