// kern/bench.h: in-guest benchmarks, selected with the boot option bench=<name>.
//
//   bench=spinlock   cycles per uncontended spin_lock + spin_unlock pair on one CPU, for the
//                    booted algorithm (lock=), clock (clock=) and build (INSTRUMENT=). Prints
//                    one line `BENCH {json}` and leaves QEMU with the pass status.
//                    scripts/bench-guest.sh boots every combination and collects the lines.
#pragma once

[[noreturn]] void bench_run(const char* which);
