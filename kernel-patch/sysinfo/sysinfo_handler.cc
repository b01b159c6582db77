// sysinfo/sysinfo_handler.cc: see sysinfo_handler.h. One function per information class and direction.
#include "sysinfo_handler.h"

#include "../lockstat/perf_record.h"
#include "../locktrace/trace_session.h"
#include "../locktrace/stack_settings.h"

namespace spinlab::sysinfo {

namespace {

using lockstat::SpinlockParams;

constexpr uint32_t kSubClassSpinlock =
    static_cast<uint32_t>(EventTraceInformationClass::kEventTraceSpinlockInformation);

// Result of one class handler: status and the length to report.
struct Answer {
    Status status;
    uint32_t length;
};

Answer mismatch(uint32_t needed) {
    return {Status::kInfoLengthMismatch, needed};
}
Answer fail(Status s) {
    return {s, 0};
}
Answer ok(uint32_t written) {
    return {Status::kSuccess, written};
}

// --- SystemPerformanceTraceInformation / EventTraceSpinlockInformation ---------------------

// Reads the sub-class and checks the length for it; the answer is set when the caller must
// stop. Sub-classes this context does not serve are kInvalidInfoClass.
bool read_trace_subclass(const Buffer& buf, const Context& ctx, uint32_t* sub, Answer* stop) {
    if (buf.length < sizeof *sub) {
        *stop = mismatch(sizeof *sub);
        return false;
    }
    if (!buf.copy_in(buf.ctx, 0, sub, sizeof *sub)) {
        *stop = fail(Status::kAccessViolation);
        return false;
    }
    uint32_t want;
    if (*sub == kSubClassSpinlock) {
        want = sizeof(EventTraceSpinlockInformation);
    } else if (*sub == kSpinlabTraceSession && ctx.trace_control != nullptr) {
        want = sizeof(TraceSessionInformation);
    } else if (*sub == kSpinlabTraceStacks && ctx.stacks_set != nullptr) {
        want = sizeof(TraceStackInformation);
    } else {
        *stop = fail(Status::kInvalidInfoClass);
        return false;
    }
    if (buf.length != want) {
        *stop = mismatch(want);
        return false;
    }
    return true;
}

Answer query_trace(const Buffer& buf, const Context& ctx) {
    Answer stop;
    uint32_t sub;
    if (!read_trace_subclass(buf, ctx, &sub, &stop)) return stop;
    if (sub == kSpinlabTraceSession) {
        TraceSessionInformation out;
        ctx.trace_query(ctx.trace_arg, &out);
        if (!buf.copy_out(buf.ctx, 0, &out, sizeof out)) return fail(Status::kAccessViolation);
        return ok(sizeof out);
    }
    if (sub == kSpinlabTraceStacks) {
        TraceStackInformation out;
        ctx.stacks_query(ctx.trace_arg, &out);
        if (!buf.copy_out(buf.ctx, 0, &out, sizeof out)) return fail(Status::kAccessViolation);
        return ok(sizeof out);
    }
    const EventTraceSpinlockInformation out = lockstat::query_spinlock_params(*ctx.params);
    if (!buf.copy_out(buf.ctx, 0, &out, sizeof out)) return fail(Status::kAccessViolation);
    return ok(sizeof out);
}

Answer set_trace(const Buffer& buf, Context& ctx) {
    Answer stop;
    uint32_t sub;
    if (!read_trace_subclass(buf, ctx, &sub, &stop)) return stop;
    if (sub == kSpinlabTraceSession) {
        TraceSessionInformation in;
        if (!buf.copy_in(buf.ctx, 0, &in, sizeof in)) return fail(Status::kAccessViolation);
        const bool start = in.command == static_cast<uint32_t>(TraceCommand::kStart);
        if (start && locktrace::first_invalid_session_param(in) != nullptr)
            return fail(Status::kInvalidParameter);
        return {ctx.trace_control(ctx.trace_arg, in), 0};
    }
    if (sub == kSpinlabTraceStacks) {
        TraceStackInformation in;
        if (!buf.copy_in(buf.ctx, 0, &in, sizeof in)) return fail(Status::kAccessViolation);
        if (locktrace::first_invalid_stack_param(in) != nullptr) return fail(Status::kInvalidParameter);
        return {ctx.stacks_set(ctx.trace_arg, in), 0};
    }
    EventTraceSpinlockInformation in;
    if (!buf.copy_in(buf.ctx, 0, &in, sizeof in)) return fail(Status::kAccessViolation);
    return {lockstat::set_spinlock_params(*ctx.params, in), 0};
}

// --- spinlock perf data ------------------------------------------------------------------

// Sums CPU `cpu` (or all) and class `lock_class` (or all registered) into r.perf.
void fill_record(const Context& ctx, uint32_t cpu, uint32_t lock_class, SpinlockPerfRecord& r) {
    __builtin_memset(&r, 0, sizeof r);
    r.cpu = cpu;
    r.class_id = lock_class;
    const uint32_t c0 = cpu == kAllCpus ? 0 : cpu;
    const uint32_t c1 = cpu == kAllCpus ? ctx.cpu_count : cpu + 1;
    const uint32_t k0 = lock_class == kAllLockClasses ? 0 : lock_class;
    const uint32_t k1 = lock_class == kAllLockClasses ? ctx.class_count : lock_class + 1;
    for (uint32_t c = c0; c < c1; c++)
        for (uint32_t k = k0; k < k1; k++)
            lockstat::merge_class_perf(r.perf, ctx.cpus[c]->classes[k]);
}

Answer query_perf(const Buffer& buf, const Context& ctx) {
    SpinlockPerfRequest req;
    if (buf.length < sizeof req) return mismatch(sizeof req);
    if (!buf.copy_in(buf.ctx, 0, &req, sizeof req)) return fail(Status::kAccessViolation);
    if (req.cpu != kAllCpus && req.cpu >= ctx.cpu_count) return fail(Status::kInvalidParameter);
    if (req.lock_class != kAllLockClasses && req.lock_class >= ctx.class_count)
        return fail(Status::kInvalidParameter);
    if (req.flags & ~kPerfKnownFlags) return fail(Status::kInvalidParameter);

    const bool merge_cpus = req.flags & kPerfMergeCpus;
    const bool merge_classes = req.flags & kPerfMergeClasses;
    // The CPUs and classes the records are for; kAll* in a record means "summed over all".
    const uint32_t ncpu = merge_cpus || req.cpu != kAllCpus ? 1 : ctx.cpu_count;
    const uint32_t nclass =
        merge_classes || req.lock_class != kAllLockClasses ? 1 : ctx.class_count;
    const uint64_t needed64 =
        sizeof(SpinlockPerfReply) + uint64_t{ncpu} * nclass * sizeof(SpinlockPerfRecord);
    if (needed64 > 0xFFFFFFFFull) return fail(Status::kInvalidParameter);
    const uint32_t needed = static_cast<uint32_t>(needed64);
    if (buf.length < needed) return mismatch(needed);

    SpinlockPerfRecord rec;  // 1280 bytes: fine on a kernel stack
    uint32_t offset = sizeof(SpinlockPerfReply);
    for (uint32_t i = 0; i < ncpu; i++) {
        const uint32_t cpu = req.cpu != kAllCpus ? req.cpu : (merge_cpus ? kAllCpus : i);
        for (uint32_t j = 0; j < nclass; j++) {
            const uint32_t cls = req.lock_class != kAllLockClasses
                                     ? req.lock_class
                                     : (merge_classes ? kAllLockClasses : j);
            fill_record(ctx, cpu, cls, rec);
            if (!buf.copy_out(buf.ctx, offset, &rec, sizeof rec))
                return fail(Status::kAccessViolation);
            offset += sizeof rec;
        }
    }
    SpinlockPerfReply reply = req;
    reply.record_count = ncpu * nclass;
    reply.record_size = sizeof(SpinlockPerfRecord);
    reply.reserved[0] = reply.reserved[1] = reply.reserved[2] = 0;
    if (!buf.copy_out(buf.ctx, 0, &reply, sizeof reply)) return fail(Status::kAccessViolation);
    return ok(needed);
}

// --- lock class table ----------------------------------------------------------------------

Answer query_classes(const Buffer& buf, const Context& ctx) {
    const uint32_t needed = sizeof(LockClassTableReply) + ctx.class_count * sizeof(LockClassEntry);
    if (buf.length < needed) return mismatch(needed);
    for (uint32_t i = 0; i < ctx.class_count; i++) {
        if (!buf.copy_out(buf.ctx, sizeof(LockClassTableReply) + i * sizeof(LockClassEntry),
                          &ctx.classes[i], sizeof(LockClassEntry)))
            return fail(Status::kAccessViolation);
    }
    const LockClassTableReply head = {ctx.class_count, sizeof(LockClassEntry)};
    if (!buf.copy_out(buf.ctx, 0, &head, sizeof head)) return fail(Status::kAccessViolation);
    return ok(needed);
}

// --- reset -----------------------------------------------------------------------------------

Answer set_reset(const Buffer& buf, Context& ctx) {
    ResetRequest req;
    if (buf.length != sizeof req) return mismatch(sizeof req);
    if (!buf.copy_in(buf.ctx, 0, &req, sizeof req)) return fail(Status::kAccessViolation);
    if (req.cpu != kAllCpus && req.cpu >= ctx.cpu_count) return fail(Status::kInvalidParameter);
    if (req.lock_class != kAllLockClasses && req.lock_class >= ctx.class_count)
        return fail(Status::kInvalidParameter);
    const uint32_t c0 = req.cpu == kAllCpus ? 0 : req.cpu;
    const uint32_t c1 = req.cpu == kAllCpus ? ctx.cpu_count : req.cpu + 1;
    for (uint32_t c = c0; c < c1; c++) ctx.reset(ctx.reset_arg, c, req.lock_class);
    return ok(0);
}

// --- system configuration --------------------------------------------------------------------

Answer query_config(const Buffer& buf, const Context& ctx) {
    if (buf.length != sizeof(SystemConfiguration)) return mismatch(sizeof(SystemConfiguration));
    SystemConfiguration out = *ctx.config;
    out.abi_version = kSysinfoAbiVersion;
    out.cpu_count = ctx.cpu_count;
    out.max_lock_classes = kMaxLockClasses;
    out.hist_buckets = kHistBuckets;
    out.lock_class_count = ctx.class_count;
    out.hypervisor_signature[kHypervisorSignatureLen - 1] = '\0';
    out.build_id[kBuildIdLen - 1] = '\0';
    if (!buf.copy_out(buf.ctx, 0, &out, sizeof out)) return fail(Status::kAccessViolation);
    return ok(sizeof out);
}

// --- workload ------------------------------------------------------------------------------

Answer query_workload(const Buffer& buf, const Context& ctx) {
    if (!ctx.workload_query) return fail(Status::kInvalidInfoClass);
    if (buf.length != sizeof(WorkloadInformation)) return mismatch(sizeof(WorkloadInformation));
    WorkloadInformation out{};
    ctx.workload_query(ctx.workload_arg, &out);
    out.name[kWorkloadNameLen - 1] = '\0';
    out.unit[kWorkloadNameLen - 1] = '\0';
    if (!buf.copy_out(buf.ctx, 0, &out, sizeof out)) return fail(Status::kAccessViolation);
    return ok(sizeof out);
}


Status finish(Answer a, uint32_t* return_length) {
    if (return_length) *return_length = a.length;
    return a.status;
}

}  // namespace

Status query_system_information(uint32_t info_class, const Buffer& buf, const Context& ctx,
                                uint32_t* return_length) {
    switch (static_cast<InfoClass>(info_class)) {
        case InfoClass::kSystemPerformanceTraceInformation:
            return finish(query_trace(buf, ctx), return_length);
        case InfoClass::kSpinlabSpinlockPerfData:
            return finish(query_perf(buf, ctx), return_length);
        case InfoClass::kSpinlabLockClassTable:
            return finish(query_classes(buf, ctx), return_length);
        case InfoClass::kSpinlabSystemConfiguration:
            return finish(query_config(buf, ctx), return_length);
        case InfoClass::kSpinlabWorkloadInformation:
            return finish(query_workload(buf, ctx), return_length);
        case InfoClass::kSpinlabResetCounters:  // set only
            break;
    }
    return finish(fail(Status::kInvalidInfoClass), return_length);
}

Status set_system_information(uint32_t info_class, const Buffer& buf, bool privileged, Context& ctx,
                              uint32_t* return_length) {
    const InfoClass c = static_cast<InfoClass>(info_class);
    if (c != InfoClass::kSystemPerformanceTraceInformation && c != InfoClass::kSpinlabResetCounters)
        return finish(fail(Status::kInvalidInfoClass), return_length);
    // Before reading anything: an unprivileged caller learns nothing and changes nothing.
    if (!privileged) return finish(fail(Status::kAccessDenied), return_length);
    if (c == InfoClass::kSpinlabResetCounters) return finish(set_reset(buf, ctx), return_length);
    return finish(set_trace(buf, ctx), return_length);
}

}  // namespace spinlab::sysinfo
