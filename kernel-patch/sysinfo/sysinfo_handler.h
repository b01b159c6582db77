// sysinfo/sysinfo_handler.h: the one handler behind query/set system information (sysinfo.h in the
// ABI), transport-free: the system call passes a Buffer whose copies check user pointers, the
// host channel server one that copies from a frame; both get the same answers.
//
// Class 0x1F has two sub-classes: kEventTraceSpinlockInformation (the four sampling
// parameters) and kSpinlabTraceSession (start/stop/flush a trace session, query its state).
//
// Order of checks (a failed check changes nothing and writes nothing to the caller):
//   1. class (and sub-class) known in this direction        else kInvalidInfoClass
//   2. set only: privileged caller                           else kAccessDenied
//   3. length (see the ABI header's "Lengths")               else kInfoLengthMismatch +
//                                                                 *return_length = needed
//   4. copy-in of the request head succeeds                  else kAccessViolation
//   5. request values permitted                              else kInvalidParameter
//   6. copy-out succeeds                                     else kAccessViolation
// On success *return_length is the number of bytes written (0 for a set).
// A copy-out failure can leave part of an answer in the caller's buffer; nothing in the
// kernel has changed by then, except for a set, whose copy-out never fails (it has none).
#pragma once

#include <spinlab/perfdata.h>
#include <spinlab/status.h>
#include <spinlab/sysinfo.h>
#include <spinlab/trace.h>
#include <stdint.h>

#include "../lockstat/params.h"

namespace spinlab::sysinfo {

// The caller's buffer: `length` bytes, reached only through copies that may fail (return
// false) for any range. Offsets are from the start of the buffer.
struct Buffer {
    uint32_t length;
    void* ctx;
    bool (*copy_in)(void* ctx, uint32_t offset, void* dst, uint32_t n);
    bool (*copy_out)(void* ctx, uint32_t offset, const void* src, uint32_t n);
};

// What the handler reads and changes. The kernel builds one at boot (after smp_init).
struct Context {
    CpuPerfData* const* cpus;  // cpus[i]: CPU i's perf data, i < cpu_count
    uint32_t cpu_count;
    const LockClassEntry* classes;  // the lock class table, entry i has id i
    uint32_t class_count;
    // Configuration as the kernel knows it; abi_version, cpu_count, max_lock_classes,
    // hist_buckets and lock_class_count are filled in by the handler from this context.
    const SystemConfiguration* config;
    lockstat::SpinlockParams* params;  // the live parameters (set changes them)
    // Zero CPU `cpu`'s counters of one class or kAllLockClasses (lockstat::reset_cpu_perf)
    // where that CPU records nothing meanwhile: the kernel runs it on that CPU (IPI) with
    // interrupts off. Called once per CPU selected; cpu is never kAllCpus.
    void (*reset)(void* arg, uint32_t cpu, uint32_t lock_class);
    void* reset_arg;
    // Trace sessions (SystemPerformanceTraceInformation, sub-class kSpinlabTraceSession), or
    // null when this kernel has none. trace_control gets a set whose parameters passed
    // first_invalid_session_param (for a start) and returns its status; trace_query fills in
    // the live session.
    Status (*trace_control)(void* arg, const TraceSessionInformation& in);
    void (*trace_query)(void* arg, TraceSessionInformation* out);
    // Call-stack settings (sub-class kSpinlabTraceStacks), or null. stacks_set gets settings that
    // passed first_invalid_stack_param (locktrace/stack_settings.h); stacks_query fills them in
    // with the counters.
    Status (*stacks_set)(void* arg, const TraceStackInformation& in);
    void (*stacks_query)(void* arg, TraceStackInformation* out);
    void* trace_arg;
    // The workload's operations (kSpinlabWorkloadInformation), or null when this guest does not
    // count them (spinlab's kernel): the class is then not served. Fills in *out.
    void (*workload_query)(void* arg, WorkloadInformation* out);
    void* workload_arg;
};

// return_length may be null.
Status query_system_information(uint32_t info_class, const Buffer& buf, const Context& ctx,
                                uint32_t* return_length);
Status set_system_information(uint32_t info_class, const Buffer& buf, bool privileged, Context& ctx,
                              uint32_t* return_length);

}  // namespace spinlab::sysinfo
