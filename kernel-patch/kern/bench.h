// kern/bench.h: in-guest benchmarks, selected with the boot option bench=<name>.
//
//   bench=spinlock   cycles per uncontended spin_lock + spin_unlock pair on one CPU, for the
//                    booted algorithm (lock=), clock (clock=) and build (INSTRUMENT=). Prints
//                    one line `BENCH {json}` and leaves QEMU with the pass status.
//                    scripts/bench-guest.sh boots every combination and collects the lines.
//   bench=traceevent cycles one kernel-lock trace event costs in the guest: spin_lock +
//                    spin_unlock pairs of a contended-looking hold with a (circular) session
//                    running, whose release writes a spinlock event or not, in alternating
//                    batches; the median difference per event with a 95 % interval of the median
//                    (distribution-free, from the order statistics), and the events written;
//                    a third batch times one irq_save + irq_restore alone (the event's pushf; cli).
//                    INSTRUMENT=1 only. scripts/bench-trace-event.sh boots it under TCG and KVM.
//   bench=memwrite   cycles per 104-byte copy (an event's size) and per 8-byte store in ring 0,
//                    into kernel heap pages and into the trace area: what a kernel path's memory
//                    accesses cost under the accelerator (under the build machines' nested KVM
//                    every ring-0 store costs thousands of cycles). scripts/bench-trace-event.sh
//                    boots it once per accelerator.
#pragma once

[[noreturn]] void bench_run(const char* which);
