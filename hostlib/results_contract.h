// hostlib/results_contract.h: the results directory's names, one table (analysis/README.md,
// "The results directory"). Every key of meta.json, status.json, clock.json and the snapshots,
// every column of timeline.csv and halts.csv and every value of their `state` and `kind` columns
// is spelled here once:
//
// - the C++ writers (experiments/runner/results.cc, collector/report_format.cc's perf_json,
//   collector/clock_fit_json.cc, hypervisor-hooks/timeline/run_intervals.cc) write
//   results::key::<name>, never a string;
// - the build writes the table to build/host/results_contract.json (results_contract_json.cc,
//   target spinlab-results-contract), which the Python analysis reads
//   (analysis/spinlab_report/contract.py), so Python spells none of them either;
// - each object's list below is what its writer writes: experiments/runner/contract_test.cc
//   (through analysis/tests/contract_check.py) holds every written object's keys against its
//   list, and analysis/tests/test_results_names.py fails where a writer or the loader spells a
//   name of this table as a string of its own.
//
// A field is added by adding its key to the master list and to its object's list; the contract
// test then fails until the writer writes it, and the reader has its name. Names that older
// results used are not here: contract.py keeps the few its reader still accepts, as such.
#pragma once

#include <spinlab/enum_names.h>

namespace spinlab::results {

// Every key, once: K(identifier, "spelling"). The identifier is the spelling (a spelling that
// is a C++ keyword would take another identifier; none is today).
#define SPINLAB_RESULTS_KEYS(K)                                                                  \
    K(acquisitions, "acquisitions")                                                              \
    K(acquisitions_counted, "acquisitions_counted")                                              \
    K(accelerator, "accelerator")                                                                \
    K(asked, "asked")                                                                            \
    K(backend, "backend")                                                                        \
    K(bound_max_cycles, "bound_max_cycles")                                                      \
    K(bound_median_cycles, "bound_median_cycles")                                                \
    K(bracket_limit_cycles, "bracket_limit_cycles")                                              \
    K(bucket_count, "bucket_count")                                                              \
    K(buffer_size, "buffer_size")                                                                \
    K(buffers, "buffers")                                                                        \
    K(buffers_per_cpu, "buffers_per_cpu")                                                        \
    K(buffers_written, "buffers_written")                                                        \
    K(cache_size, "cache_size")                                                                  \
    K(calibrated_from, "calibrated_from")                                                        \
    K(calibration_bound_ns, "calibration_bound_ns")                                              \
    K(cgroup, "cgroup")                                                                          \
    K(classes, "classes")                                                                        \
    K(clock, "clock")                                                                            \
    K(count, "count")                                                                            \
    K(counters_found, "counters_found")                                                          \
    K(cpu, "cpu")                                                                                \
    K(cpu_mapping, "cpu_mapping")                                                                \
    K(cpu_model, "cpu_model")                                                                    \
    K(cpus, "cpus")                                                                              \
    K(cycles, "cycles")                                                                          \
    K(damaged_frames, "damaged_frames")                                                          \
    K(date, "date")                                                                              \
    K(done, "done")                                                                              \
    K(drift_bound_ppm, "drift_bound_ppm")                                                        \
    K(drift_coverage, "drift_coverage")                                                          \
    K(drift_measured, "drift_measured")                                                          \
    K(drift_note, "drift_note")                                                                  \
    K(drift_ppm, "drift_ppm")                                                                    \
    K(drift_segments, "drift_segments")                                                          \
    K(duration_s, "duration_s")                                                                  \
    K(enable_flags, "enable_flags")                                                              \
    K(end, "end")                                                                                \
    K(end_host_tsc, "end_host_tsc")                                                              \
    K(end_ns, "end_ns")                                                                          \
    K(enter_tsc, "enter_tsc")                                                                    \
    K(events, "events")                                                                          \
    K(events_attempted, "events_attempted")                                                      \
    K(events_lost, "events_lost")                                                                \
    K(events_written, "events_written")                                                          \
    K(exit_tsc, "exit_tsc")                                                                      \
    K(fallback, "fallback")                                                                      \
    K(file, "file")                                                                              \
    K(flush_timer_ms, "flush_timer_ms")                                                          \
    K(format, "format")                                                                          \
    K(freeze_rt_priority, "freeze_rt_priority")                                                  \
    K(freeze_write_ms, "freeze_write_ms")                                                        \
    K(freezer, "freezer")                                                                        \
    K(git_rev, "git_rev")                                                                        \
    K(guest, "guest")                                                                            \
    K(guest_build_id, "guest_build_id")                                                          \
    K(guest_hypervisor, "guest_hypervisor")                                                      \
    K(guest_kernel, "guest_kernel")                                                              \
    K(guest_tsc, "guest_tsc")                                                                    \
    K(guest_tsc_hz, "guest_tsc_hz")                                                              \
    K(hold_cycles_max, "hold_cycles_max")                                                        \
    K(hold_cycles_sum, "hold_cycles_sum")                                                        \
    K(hold_hist, "hold_hist")                                                                    \
    K(hold_overflow, "hold_overflow")                                                            \
    K(holder_cpu, "holder_cpu")                                                                  \
    K(holder_end_cpu, "holder_end_cpu")                                                          \
    K(holder_steal_ns, "holder_steal_ns")                                                        \
    K(holds, "holds")                                                                            \
    K(holds_timed, "holds_timed")                                                                \
    K(host, "host")                                                                              \
    K(host_cpus, "host_cpus")                                                                    \
    K(host_tsc_hz, "host_tsc_hz")                                                                \
    K(hypervisor, "hypervisor")                                                                  \
    K(kernel, "kernel")                                                                          \
    K(kernel_append, "kernel_append")                                                            \
    K(key_held, "key_held")                                                                      \
    K(kind, "kind")                                                                              \
    K(late, "late")                                                                              \
    K(libvirt_version, "libvirt_version")                                                        \
    K(lhp, "lhp")                                                                                \
    K(lhp_class, "lhp_class")                                                                    \
    K(lock, "lock")                                                                              \
    K(lock_class, "lock_class")                                                                  \
    K(log_buffers_lost, "log_buffers_lost")                                                      \
    K(logger_mode, "logger_mode")                                                                \
    K(long_holds, "long_holds")                                                                  \
    K(long_wait_threshold, "long_wait_threshold")                                                \
    K(long_waits, "long_waits")                                                                  \
    K(long_waits_dropped, "long_waits_dropped")                                                  \
    K(loss, "loss")                                                                              \
    K(max_bracket_cycles, "max_bracket_cycles")                                                  \
    K(max_stack_depth, "max_stack_depth")                                                        \
    K(maximum_buffers, "maximum_buffers")                                                        \
    K(memory_mb, "memory_mb")                                                                    \
    K(method, "method")                                                                          \
    K(minimum_buffers, "minimum_buffers")                                                        \
    K(name, "name")                                                                              \
    K(neighbours, "neighbours")                                                                  \
    K(noise_floor_cycles, "noise_floor_cycles")                                                  \
    K(offset_cycles, "offset_cycles")                                                            \
    K(offset_steps_cycles, "offset_steps_cycles")                                                \
    K(ops, "ops")                                                                                \
    K(ops_per_s, "ops_per_s")                                                                    \
    K(order, "order")                                                                            \
    K(overcommit, "overcommit")                                                                  \
    K(pause, "pause")                                                                            \
    K(phase, "phase")                                                                            \
    K(phases, "phases")                                                                          \
    K(pin, "pin")                                                                                \
    K(pinning, "pinning")                                                                        \
    K(placed, "placed")                                                                          \
    K(plan, "plan")                                                                              \
    K(points, "points")                                                                          \
    K(preemptor, "preemptor")                                                                    \
    K(preemptor_comm, "preemptor_comm")                                                          \
    K(preemptor_pid, "preemptor_pid")                                                            \
    K(preemptor_vcpu, "preemptor_vcpu")                                                          \
    K(preemptor_vm, "preemptor_vm")                                                              \
    K(profile_interval, "profile_interval")                                                      \
    K(pv_halts, "pv_halts")                                                                      \
    K(pv_kicks, "pv_kicks")                                                                      \
    K(pv_spurious_wakeups, "pv_spurious_wakeups")                                                \
    K(pv_steals, "pv_steals")                                                                    \
    K(qemu_version, "qemu_version")                                                              \
    K(readings, "readings")                                                                      \
    K(realtime_buffers_lost, "realtime_buffers_lost")                                            \
    K(reason, "reason")                                                                          \
    K(ref_guest_tsc, "ref_guest_tsc")                                                            \
    K(reference, "reference")                                                                    \
    K(rejected, "rejected")                                                                      \
    K(rep, "rep")                                                                                \
    K(repetitions, "repetitions")                                                                \
    K(residual_cycles, "residual_cycles")                                                        \
    K(role, "role")                                                                              \
    K(run_id, "run_id")                                                                          \
    K(runner, "runner")                                                                          \
    K(sampler_spun_ms, "sampler_spun_ms")                                                        \
    K(samples, "samples")                                                                        \
    K(samples_missed, "samples_missed")                                                          \
    K(samples_taken, "samples_taken")                                                            \
    K(seed, "seed")                                                                              \
    K(session_id, "session_id")                                                                  \
    K(slot, "slot")                                                                              \
    K(source, "source")                                                                          \
    K(stack_caching, "stack_caching")                                                            \
    K(stack_flags, "stack_flags")                                                                \
    K(stacks, "stacks")                                                                          \
    K(start, "start")                                                                            \
    K(start_host_tsc, "start_host_tsc")                                                          \
    K(start_ns, "start_ns")                                                                      \
    K(start_tsc, "start_tsc")                                                                    \
    K(state, "state")                                                                            \
    K(thaw_write_ms, "thaw_write_ms")                                                            \
    K(tid, "tid")                                                                                \
    K(timeline_source, "timeline_source")                                                        \
    K(trace, "trace")                                                                            \
    K(tsc_hz, "tsc_hz")                                                                          \
    K(uncontended, "uncontended")                                                                \
    K(unit, "unit")                                                                              \
    K(unordered, "unordered")                                                                    \
    K(used, "used")                                                                              \
    K(vcpu, "vcpu")                                                                              \
    K(vcpu_thread_ids, "vcpu_thread_ids")                                                        \
    K(vcpus, "vcpus")                                                                            \
    K(vm_name, "vm_name")                                                                        \
    K(vms, "vms")                                                                                \
    K(wait_cycles, "wait_cycles")                                                                \
    K(wait_cycles_max, "wait_cycles_max")                                                        \
    K(wait_cycles_sum, "wait_cycles_sum")                                                        \
    K(wait_hist, "wait_hist")                                                                    \
    K(wait_overflow, "wait_overflow")                                                            \
    K(waiter_steal_ns, "waiter_steal_ns")                                                        \
    K(wall, "wall")                                                                              \
    K(warmup_s, "warmup_s")                                                                      \
    K(why_not, "why_not")                                                                        \
    K(wide, "wide")                                                                              \
    K(workload, "workload")

namespace key {
#define SPINLAB_RESULTS_KEY_CONSTANT(ident, spelling) inline constexpr const char ident[] = spelling;
SPINLAB_RESULTS_KEYS(SPINLAB_RESULTS_KEY_CONSTANT)
#undef SPINLAB_RESULTS_KEY_CONSTANT
}  // namespace key

// Each object of the results, as O(object, KEYS): the keys its writer writes, in its order.
// Optional keys (written only sometimes) are in the list too; analysis/README.md says when.
#define SPINLAB_RESULTS_OBJECTS(O)                                                               \
    /* meta.json (results.cc meta_json) */                                                       \
    O(meta, X(format) X(run_id) X(date) X(git_rev) X(host) X(qemu_version) X(libvirt_version)    \
            X(accelerator) X(backend) X(vcpus) X(memory_mb) X(lock) X(pause) X(clock) X(pinning) \
            X(guest_tsc_hz) X(workload) X(kernel_append) X(phases) X(repetitions) X(order)       \
            X(seed) X(plan) X(duration_s) X(warmup_s) X(vm_name) X(vcpu_thread_ids)              \
            X(cpu_mapping) X(guest_build_id) X(guest_hypervisor) X(guest) X(guest_kernel)        \
            X(runner) X(freeze_rt_priority) X(freezer) X(neighbours) X(timeline_source)          \
            X(trace))                                                                            \
    O(meta_host, X(cpu_model) X(kernel) X(cpus) X(tsc_hz) X(hypervisor))                         \
    O(meta_freeze_rt_priority, X(asked) X(used) X(fallback))                                     \
    O(meta_freezer, X(slot) X(cgroup) X(key_held) X(freeze_write_ms) X(thaw_write_ms))           \
    O(meta_neighbours, X(host_cpus) X(vms) X(overcommit))                                        \
    O(meta_neighbour_vm, X(name) X(role) X(vcpus) X(memory_mb) X(lock) X(workload) X(pin))       \
    /* meta.json's trace: the session's parameters as [trace] asked (results.cc                  \
       trace_session_fields, which each snapshot's trace starts with too), and the stacks */     \
    O(meta_trace, X(enable_flags) X(buffer_size) X(minimum_buffers) X(maximum_buffers)           \
                  X(flush_timer_ms) X(logger_mode) X(profile_interval) X(stacks))                \
    O(meta_trace_stacks, X(stack_flags) X(stack_caching) X(max_stack_depth) X(bucket_count)      \
                         X(cache_size))                                                          \
    /* status.json */                                                                            \
    O(status, X(format) X(state) X(reason) X(done))                                              \
    /* clock.json: format, the fit (clock_fit_json.h), samples_missed, what the sampler spun   \
       and its reference clock (collector/clock_reference.h) */                                 \
    O(clock_fit, X(method) X(offset_cycles) X(host_tsc_hz) X(drift_ppm) X(drift_measured)        \
                 X(drift_bound_ppm) X(drift_note) X(drift_segments) X(drift_coverage)            \
                 X(noise_floor_cycles) X(ref_guest_tsc) X(offset_steps_cycles)                   \
                 X(bound_max_cycles) X(bound_median_cycles) X(samples) X(samples_taken)          \
                 X(rejected) X(residual_cycles) X(max_bracket_cycles) X(bracket_limit_cycles)    \
                 X(points))                                                                      \
    O(clock_rejected, X(unordered) X(wide) X(late))                                              \
    O(clock, X(format) X(samples_missed) X(sampler_spun_ms) X(reference))                        \
    O(clock_reference, X(source) X(readings) X(placed) X(calibrated_from)                        \
                       X(calibration_bound_ns)                                                   \
                       X(why_not))                                                               \
    /* snapshots/<phase>-r<rep>.json */                                                          \
    O(snapshot, X(format) X(phase) X(rep) X(start) X(end) X(duration_s) X(workload) X(cpus)      \
                X(long_waits) X(long_wait_threshold) X(long_waits_dropped) X(trace))             \
    O(stamp, X(guest_tsc) X(wall))                                                               \
    O(workload, X(ops) X(ops_per_s) X(classes) X(unit))                                          \
    O(snapshot_cpu, X(cpu) X(acquisitions_counted) X(pv_halts) X(pv_kicks) X(pv_spurious_wakeups)\
                    X(pv_steals) X(classes))                                                     \
    O(pv, X(pv_halts) X(pv_kicks) X(pv_spurious_wakeups) X(pv_steals))                           \
    /* a lock class's counters (perf_json: snapshots, spinlab-collect query and record) */       \
    O(class_perf, X(acquisitions) X(uncontended) X(wait_overflow) X(wait_cycles_sum)             \
                  X(wait_cycles_max) X(holds_timed) X(hold_overflow) X(hold_cycles_sum)          \
                  X(hold_cycles_max) X(long_holds) X(wait_hist) X(hold_hist) X(lhp))             \
    O(lhp_entry, X(count) X(cycles))                                                             \
    O(long_wait, X(cpu) X(lock_class) X(start_tsc) X(wait_cycles) X(holder_cpu)                  \
                 X(holder_end_cpu) X(lhp_class) X(holds) X(holder_steal_ns) X(waiter_steal_ns))   \
    O(snapshot_trace, X(file) X(session_id) X(enable_flags) X(buffer_size) X(minimum_buffers)    \
                      X(maximum_buffers) X(flush_timer_ms) X(logger_mode) X(profile_interval)    \
                      X(buffers_per_cpu) X(events) X(buffers) X(damaged_frames)                  \
                      X(counters_found) X(loss) X(cpus))                                         \
    O(trace_loss, X(events_attempted) X(events_written) X(events_lost) X(buffers_written)        \
                  X(log_buffers_lost) X(realtime_buffers_lost))                                  \
    O(trace_cpu, X(cpu) X(loss))                                                                 \
    /* timeline.csv's columns (hypervisor-hooks/timeline/run_intervals.cc), in order */          \
    O(timeline, SPINLAB_TIMELINE_COLUMNS(X))                                                     \
    /* halts.csv's columns (experiments/runner/results.cc halts_csv), in order */                \
    O(halts, SPINLAB_HALTS_COLUMNS(X))

#define SPINLAB_TIMELINE_COLUMNS(X)                                                              \
    X(vcpu) X(tid) X(state) X(start_host_tsc) X(end_host_tsc) X(phase) X(rep) X(start_ns)        \
    X(end_ns) X(reason) X(cpu) X(preemptor) X(preemptor_vm) X(preemptor_vcpu) X(preemptor_pid)  \
    X(preemptor_comm)

// timeline.csv's `state`: what a vCPU thread was doing over a row's span. off: switched out
// (runnable or asleep; the preemptor column says who took the CPU); frozen: in a frozen cgroup;
// unknown: a switch the host's trace lacks, so either on or off.
#define SPINLAB_TIMELINE_STATES(X) X(kOn, 0, "on") X(kOff, 1, "off") X(kFrozen, 2, "frozen") X(kUnknown, 3, "unknown")
SPINLAB_DENSE_ENUM(RunState, uint32_t, SPINLAB_TIMELINE_STATES, kRunStateNames, run_state_name);

// halts.csv: the guest's halt spans (collector/halt_log.h), one row per span or stretch.
#define SPINLAB_HALTS_COLUMNS(X) X(cpu) X(enter_tsc) X(exit_tsc) X(kind)

// halts.csv's `kind`: halted: the vCPU's guest halted over [enter_tsc, exit_tsc) (no exit_tsc:
// still halted at the last read); lost: spans were overwritten before the host read them, so the
// guest may have halted anywhere in [enter_tsc, exit_tsc) (no exit_tsc: to the end of the
// record); refused: the guest wrote a span that failed the host's checks, and from enter_tsc on
// nothing of that CPU is known (exit_tsc always empty).
#define SPINLAB_HALT_KINDS(X) X(kHalted, 0, "halted") X(kLost, 1, "lost") X(kRefused, 2, "refused")
SPINLAB_DENSE_ENUM(HaltKind, uint32_t, SPINLAB_HALT_KINDS, kHaltKindNames, halt_kind_name);

// status.json's `state`: the run finished every repetition, or stopped early (reason says why).
#define SPINLAB_RUN_STATES(X) X(kComplete, 0, "complete") X(kPartial, 1, "partial")
SPINLAB_DENSE_ENUM(RunCompletion, uint32_t, SPINLAB_RUN_STATES, kRunCompletionNames, run_completion_name);

}  // namespace spinlab::results
