#!/usr/bin/env bash
# Build kernel-patch's libFuzzer targets (the channel's frame decoder and server, the shared-region
# header parser, the trace file reader, and the collector's stack decoder: the code the host
# collector runs on guest-written bytes; and the kernel's take of a user-mode logger's ring: the
# code the kernel runs on a process's bytes)
# with clang, ASan and UBSan, whatever compiler CMake uses, and run each for a bounded time.
# Usage: kernel-patch/fuzz.sh [SECONDS_EACH] [BUILD_DIR]   (scripts/fuzz.sh, make fuzz, make test)
#   SECONDS_EACH  default 20 (`make test` passes 5, `make fuzz` FUZZ_SECONDS)
#   BUILD_DIR     default build/fuzz under the repository root
# Exit status: 0 when no target found a crash; the crashing input is left in BUILD_DIR.
set -euo pipefail
secs=${1:-20}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${2:-$root/build/fuzz}")
mkdir -p "$out"
kp=$root/kernel-patch
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I "$kp" -I "$kp/abi")
channel=("$kp/channel/crc32c.cc" "$kp/channel/frame_codec.cc" "$kp/channel/region_header.cc"
         "$kp/channel/clock_area.cc" "$kp/channel/channel_server.cc")

locktrace=("$kp/locktrace/buffer_parser.cc" "$kp/locktrace/trace_file.cc" "$kp/channel/crc32c.cc")

for target in frame_codec_fuzzer region_header_fuzzer; do
  clang++ "${flags[@]}" "$kp/channel/$target.cc" "${channel[@]}" -o "$out/$target"
done
clang++ "${flags[@]}" "$kp/locktrace/trace_file_fuzzer.cc" "${locktrace[@]}" -o "$out/trace_file_fuzzer"
# The kernel's take of a user-mode logger's ring: the ring is the thread's bytes.
clang++ "${flags[@]}" "$kp/locktrace/user_ring_fuzzer.cc" "$kp/locktrace/user_ring.cc" "$kp/locktrace/writer.cc" \
    "$kp/locktrace/drain.cc" "$kp/locktrace/trace_session.cc" "$kp/locktrace/buffer_parser.cc" -o "$out/user_ring_fuzzer"
col=$root/collector
clang++ "${flags[@]}" -I "$col" "$col/trace/trace_stacks_fuzzer.cc" "$col/trace/trace_stacks.cc" \
    "$kp/locktrace/buffer_parser.cc" -o "$out/trace_stacks_fuzzer"
# Frames are small; a region needs a page and CPU blocks to get past the size checks; a trace
# file with a couple of small buffers fits in 16 KB.
# A stack buffer: a few events with up to 256 frames each.
# A user ring: 8 bytes of session, then steps of 12 bytes (a record, a scribble, a take).
declare -A max_len=([frame_codec_fuzzer]=8192 [region_header_fuzzer]=131072 [trace_file_fuzzer]=16384
                    [trace_stacks_fuzzer]=8192 [user_ring_fuzzer]=2048)
for target in frame_codec_fuzzer region_header_fuzzer trace_file_fuzzer trace_stacks_fuzzer user_ring_fuzzer; do
  corpus=$out/corpus-$target
  mkdir -p "$corpus"
  echo "fuzz: $target for ${secs}s" >&2
  (cd "$out" && "./$target" -max_total_time="$secs" -max_len="${max_len[$target]}" -len_control=0 -print_final_stats=1 \
      "$corpus" 2> "$out/$target.log") || {
    echo "fuzz: $target FAILED, see $out/$target.log" >&2
    tail -40 "$out/$target.log" >&2
    exit 1
  }
  grep -E "^stat::number_of_executed_units" "$out/$target.log" >&2 || true
done
echo "fuzz: no crashes" >&2
