// experiments/runner/results.cc: see results.h.
#include "results.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "clock_fit_json.h"
#include "hostlib/json_writer.h"
#include "hostlib/results_contract.h"
#include "report_format.h"
#include "trace/trace_groups.h"

namespace fs = std::filesystem;

namespace spinlab::run {
namespace {

namespace key = spinlab::results::key;  // every name the results files use (hostlib/results_contract.h)

using collect::JsonWriter;

void stamp(JsonWriter& j, const char* name, const Stamp& s) {
    j.key(name).begin_object();
    j.key(key::guest_tsc);
    if (s.guest_tsc)
        j.value(*s.guest_tsc);
    else
        j.value(uint64_t(0));
    j.field(key::wall, s.wall);
    j.end_object();
}

// JsonWriter writes a non-finite double as null (JSON has no NaN): the one way to write null.
void null_value(JsonWriter& j) { j.value(std::numeric_limits<double>::quiet_NaN()); }

bool starts_with_any(const std::string& s, const std::vector<std::string>& prefixes) {
    for (const auto& p : prefixes)
        if (s.rfind(p, 0) == 0) return true;
    return false;
}

// The loss counters under TraceLossCounters' names (ETW's EventsLost, BuffersWritten,
// LogBuffersLost, RealTimeBuffersLost, and the attempted/written pair of the invariant).
void loss_json(JsonWriter& j, const TraceLossCounters& c) {
    j.begin_object();
    j.field(key::events_attempted, c.events_attempted);
    j.field(key::events_written, c.events_written);
    j.field(key::events_lost, c.events_lost);
    j.field(key::buffers_written, c.buffers_written);
    j.field(key::log_buffers_lost, c.log_buffers_lost);
    j.field(key::realtime_buffers_lost, c.realtime_buffers_lost);
    j.end_object();
}

}  // namespace

void trace_session_fields(JsonWriter& j, const TraceSessionInformation& p) {
    j.field(key::enable_flags, collect::trace_groups_text(p.enable_flags));
    j.field(key::buffer_size, p.buffer_size);
    j.field(key::minimum_buffers, p.minimum_buffers);
    j.field(key::maximum_buffers, p.maximum_buffers);
    j.field(key::flush_timer_ms, p.flush_timer_ms);
    j.field(key::logger_mode, trace_logger_mode_name(TraceLoggerMode(p.logger_mode)));
    j.field(key::profile_interval, p.profile_interval);
}

std::map<std::string, WorkloadOps> workload_ops(const collect::Snapshot& counters,
                                                const collect::ClassNames& names,
                                                const std::string& program,
                                                const std::vector<std::string>& prefixes,
                                                double duration_s) {
    std::map<std::string, WorkloadOps> out;
    uint64_t ops = 0;
    bool any = false;
    for (const auto& cpu : counters.cpus)
        for (uint32_t id = 0; id < cpu.classes.size(); ++id)
            if (starts_with_any(names.name(id), prefixes)) {
                ops += cpu.classes[id].acquisitions;
                any = true;
            }
    if (any || !prefixes.empty()) {
        WorkloadOps w;
        w.ops = ops;
        w.ops_per_s = duration_s > 0 ? double(ops) / duration_s : 0;
        w.classes = prefixes;
        out[program] = w;
    }
    return out;
}

std::map<std::string, WorkloadOps> counted_workload_ops(const WorkloadInformation& start,
                                                        const WorkloadInformation& end, double duration_s) {
    WorkloadOps w;
    w.ops = end.ops >= start.ops ? end.ops - start.ops : 0;
    w.ops_per_s = duration_s > 0 ? double(w.ops) / duration_s : 0;
    w.unit = std::string(end.unit, strnlen(end.unit, sizeof end.unit));
    if (w.unit.empty()) w.unit = "operations";
    std::string name(end.name, strnlen(end.name, sizeof end.name));
    return {{name.empty() ? std::string("unnamed") : name, w}};
}

namespace {

// "workload": each program's operations over the window, the classes counted or the guest's unit.
void workload_json(JsonWriter& j, const std::map<std::string, WorkloadOps>& workload) {
    j.key(key::workload).begin_object();
    for (const auto& [name, w] : workload) {
        j.key(name).begin_object();
        j.field(key::ops, w.ops);
        j.field(key::ops_per_s, w.ops_per_s);
        j.key(key::classes).begin_array();
        for (const auto& c : w.classes) j.value(c);
        j.end_array();
        if (!w.unit.empty()) j.field(key::unit, w.unit);
        j.end_object();
    }
    j.end_object();
}

// "cpus": each CPU's counters of its non-empty classes, by class name.
void cpus_json(JsonWriter& j, const collect::Snapshot& counters, const collect::ClassNames& names) {
    j.key(key::cpus).begin_array();
    for (const auto& cpu : counters.cpus) {
        j.begin_object();
        j.field(key::cpu, cpu.cpu);
        j.field(key::acquisitions_counted, acquisitions_counted_name(cpu.acquisitions_counted));
        collect::pv_fields(j, cpu.pv);
        j.key(key::classes).begin_object();
        for (uint32_t id = 0; id < cpu.classes.size(); ++id) {
            const LockClassPerf& c = cpu.classes[id];
            if (c.acquisitions == 0) continue;  // the contract lets empty classes be left out
            j.key(names.name(id));
            collect::perf_json(j, c);
        }
        j.end_object();
        j.end_object();
    }
    j.end_array();
}

void optional_cpu(JsonWriter& j, const char* name, const std::optional<uint32_t>& cpu) {
    j.key(name);
    if (cpu)
        j.value(*cpu);
    else
        null_value(j);
}

// One long wait: where and how long, its holders, its guest-side class and steal times.
void long_wait_json(JsonWriter& j, const LongWaitEntry& w) {
    j.begin_object();
    j.field(key::cpu, w.cpu);
    j.field(key::lock_class, w.lock_class);
    j.field(key::start_tsc, w.start_tsc);
    j.field(key::wait_cycles, w.wait_cycles);
    optional_cpu(j, key::holder_cpu, w.holder_cpu);
    optional_cpu(j, key::holder_end_cpu, w.holder_end_cpu);
    j.field(key::lhp_class, lhp_class_name(LhpClass(w.lhp_class)));
    if (!w.holds.empty()) {
        j.key(key::holds).begin_array();
        for (const HoldLink& h : w.holds) {  // [cpu, from_tsc], null: not traced
            j.begin_array();
            j.value(h.cpu);
            if (h.from_tsc)
                j.value(*h.from_tsc);
            else
                null_value(j);
            j.end_array();
        }
        j.end_array();
    }
    if (w.holder_steal_ns) j.field(key::holder_steal_ns, *w.holder_steal_ns);
    if (w.waiter_steal_ns) j.field(key::waiter_steal_ns, *w.waiter_steal_ns);
    j.end_object();
}

void long_waits_json(JsonWriter& j, const LongWaits& lw) {
    j.key(key::long_waits).begin_array();
    for (const auto& w : lw.entries) long_wait_json(j, w);
    j.end_array();
    j.field(key::long_wait_threshold, lw.min_cycles);
    j.field(key::long_waits_dropped, lw.dropped);
}

// "trace": the repetition's session, what its file holds and what it lost, in total and per CPU.
void trace_json(JsonWriter& j, const TraceRecord& t) {
    j.key(key::trace).begin_object();
    j.field(key::file, t.file);
    j.field(key::session_id, t.session.session_id);
    trace_session_fields(j, t.session);
    j.field(key::buffers_per_cpu, t.session.buffers_per_cpu);
    j.field(key::events, t.events);
    j.field(key::buffers, t.buffers);
    j.field(key::damaged_frames, t.damaged_frames);
    j.field(key::counters_found, t.counters_found);
    j.key(key::loss);
    loss_json(j, t.totals);
    j.key(key::cpus).begin_array();
    for (const TraceCpuCounters& c : t.cpus) {
        j.begin_object();
        j.field(key::cpu, c.cpu);
        j.key(key::loss);
        loss_json(j, c.counters);
        j.end_object();
    }
    j.end_array();
    j.end_object();
}

}  // namespace

std::string snapshot_json(const SnapshotRecord& r) {
    JsonWriter j;
    j.begin_object();
    j.field(key::format, kResultsFormat);
    j.field(key::phase, r.phase);
    j.field(key::rep, r.rep);
    stamp(j, key::start, r.start);
    stamp(j, key::end, r.end);
    j.field(key::duration_s, r.duration_s);
    workload_json(j, r.workload);
    cpus_json(j, r.counters, r.names);
    if (r.long_waits) long_waits_json(j, *r.long_waits);
    if (r.trace) trace_json(j, *r.trace);
    j.end_object();
    return j.take() + "\n";
}

std::string status_json(bool complete, const std::string& reason, const std::vector<Done>& done) {
    JsonWriter j;
    j.begin_object();
    j.field(key::format, kResultsFormat);
    j.field(key::state, results::run_completion_name(complete ? results::RunCompletion::kComplete
                                                                     : results::RunCompletion::kPartial));
    j.field(key::reason, reason);
    j.key(key::done).begin_array();
    for (const Done& d : done) {
        j.begin_array();
        j.value(d.phase);
        j.value(d.rep);
        j.end_array();
    }
    j.end_array();
    j.end_object();
    return j.take() + "\n";
}

std::string clock_json(const collect::ClockFit& fit, const ClockSampling& sampling) {
    JsonWriter j;
    j.begin_object();
    j.field(key::format, kResultsFormat);
    collect::write_clock_fit(j, fit);  // the one shape of a fit (the record file's end line too)
    // Attempts that saw no publication within their wait: not samples, so not in samples_taken.
    j.field(key::samples_missed, sampling.missed);
    j.field(key::sampler_spun_ms, sampling.spun_ms);
    const collect::ClockSampler::Reference& r = sampling.reference;
    j.key(key::reference).begin_object();
    j.field(key::source, r.source);
    j.field(key::readings, uint64_t(r.readings));
    j.field(key::placed, uint64_t(r.placed));
    j.field(key::calibrated_from, uint64_t(r.calibration.used));
    j.key(key::calibration_bound_ns);
    if (r.calibration.ok) j.value(r.calibration.half_width_ns());
    else null_value(j);
    j.field(key::why_not, r.calibration.ok ? "" : r.calibration.why_not);
    j.end_object();
    j.end_object();
    return j.take() + "\n";
}

namespace {

struct HaltRow {
    uint32_t cpu;
    uint64_t enter;
    std::optional<uint64_t> exit;
    results::HaltKind kind;
};

}  // namespace

bool records_halts(const std::vector<collect::CpuHalts>& halts) {
    return std::any_of(halts.begin(), halts.end(), [](const collect::CpuHalts& h) { return h.recording; });
}

std::string halts_csv(const std::vector<collect::CpuHalts>& halts) {
    using results::HaltKind;
    std::vector<HaltRow> rows;
    for (const collect::CpuHalts& h : halts) {
        if (!h.recording) continue;
        for (const HaltSpan& s : h.spans) rows.push_back({h.cpu, s.enter_tsc, s.exit_tsc, HaltKind::kHalted});
        for (const collect::HaltRange& l : h.lost) rows.push_back({h.cpu, l.from, l.to, HaltKind::kLost});
        if (h.halted_since) rows.push_back({h.cpu, *h.halted_since, std::nullopt, HaltKind::kHalted});
        if (h.refused_from) rows.push_back({h.cpu, *h.refused_from, std::nullopt, HaltKind::kRefused});
    }
    // Stable: at one enter, a span before a lost range or a refusal that begins at its exit.
    std::stable_sort(rows.begin(), rows.end(), [](const HaltRow& a, const HaltRow& b) {
        return a.cpu != b.cpu ? a.cpu < b.cpu : a.enter < b.enter;
    });
    // The columns of the results' halts object, in its order (hostlib/results_contract.h).
    std::string csv;
#define X(ident) csv += std::string(csv.empty() ? "" : ",") + key::ident;
    SPINLAB_HALTS_COLUMNS(X)
#undef X
    csv += '\n';
    csv.reserve(csv.size() + rows.size() * 48);
    for (const HaltRow& r : rows) {
        csv += std::to_string(r.cpu);
        csv += ',';
        csv += std::to_string(r.enter);
        csv += ',';
        if (r.exit) csv += std::to_string(*r.exit);
        csv += ',';
        csv += results::halt_kind_name(r.kind);
        csv += '\n';
    }
    return csv;
}

namespace {

// key: the text, or null where it is empty (not known, not applicable).
void text_or_null(JsonWriter& j, const char* name, const std::string& v) {
    j.key(name);
    if (v.empty()) null_value(j);
    else j.value(v);
}

void host_json(JsonWriter& j, const HostInfo& h) {
    j.key(key::host).begin_object();
    j.field(key::cpu_model, h.cpu_model);
    j.field(key::kernel, h.kernel);
    j.field(key::cpus, h.cpus);
    j.field(key::tsc_hz, h.tsc_hz);
    j.field(key::hypervisor, h.hypervisor);
    j.end_object();
}

// The phases, how often and in which order they ran ("plan": [phase, rep] pairs).
void plan_json(JsonWriter& j, const Meta& m) {
    j.key(key::phases).begin_array();
    for (const auto& p : m.phases) j.value(p);
    j.end_array();
    j.field(key::repetitions, m.repetitions);
    j.field(key::order, m.order);
    j.field(key::seed, m.seed);
    j.key(key::plan).begin_array();
    for (const Done& d : m.plan) {
        j.begin_array();
        j.value(d.phase);
        j.value(d.rep);
        j.end_array();
    }
    j.end_array();
}

// How the freeze phases' freezes were made: the injector's priority and the freezer's writes.
void freeze_injection_json(JsonWriter& j, const Meta& m) {
    j.key(key::freeze_rt_priority).begin_object();
    j.field(key::asked, m.freeze_rt_priority.asked);
    j.key(key::used);
    if (m.freeze_rt_priority.used) j.value(*m.freeze_rt_priority.used);
    else null_value(j);
    text_or_null(j, key::fallback, m.freeze_rt_priority.fallback);
    j.end_object();
    j.key(key::freezer).begin_array();
    for (const Meta::FreezerWrites& f : m.freezer) {
        j.begin_object().field(key::slot, f.slot).field(key::cgroup, f.cgroup).field(key::key_held, f.key_held);
        j.key(key::freeze_write_ms).fixed(f.freeze_write_ms, 4);
        j.key(key::thaw_write_ms).fixed(f.thaw_write_ms, 4);
        j.end_object();
    }
    j.end_array();
}

void neighbour_vm_json(JsonWriter& j, const Meta::NeighbourVm& v) {
    j.begin_object();
    j.field(key::name, v.name);
    j.field(key::role, v.role);
    j.field(key::vcpus, v.vcpus);
    j.field(key::memory_mb, v.memory_mb);
    j.field(key::lock, v.lock);
    j.field(key::workload, v.workload);
    j.key(key::pin).begin_array();
    for (uint32_t c : v.pin) j.value(c);
    j.end_array();
    j.end_object();
}

void neighbours_json(JsonWriter& j, const std::optional<Meta::Neighbours>& n) {
    j.key(key::neighbours);
    if (!n) {
        null_value(j);
        return;
    }
    j.begin_object();
    j.key(key::host_cpus).begin_array();
    for (uint32_t c : n->host_cpus) j.value(c);
    j.end_array();
    j.key(key::vms).begin_array();
    for (const Meta::NeighbourVm& v : n->vms) neighbour_vm_json(j, v);
    j.end_array();
    j.key(key::overcommit).begin_object();
    for (const auto& [phase, ratio] : n->overcommit) j.field(phase, ratio);
    j.end_object();
    j.end_object();
}

// The trace session as asked for, with the call-stack settings (TraceStackInformation) the
// sessions started with; null without [trace].
void trace_meta_json(JsonWriter& j, const Meta& m) {
    j.key(key::trace);
    if (!m.trace) {
        null_value(j);
        return;
    }
    j.begin_object();
    trace_session_fields(j, *m.trace);
    const TraceStackInformation& s = m.trace_stacks;
    j.key(key::stacks).begin_object();
    j.field(key::stack_flags, s.stack_flags ? collect::trace_groups_text(s.stack_flags) : std::string("none"));
    j.field(key::stack_caching, s.caching ? "on" : "off");
    j.field(key::max_stack_depth, s.max_depth);
    j.field(key::bucket_count, s.bucket_count);
    j.field(key::cache_size, s.cache_size);
    j.end_object();
    j.end_object();
}

// The VM and its guest: how QEMU ran it, the kernel's choices, the workload.
void vm_json(JsonWriter& j, const Meta& m) {
    j.field(key::qemu_version, m.qemu_version);
    j.key(key::libvirt_version);
    if (m.libvirt_version)
        j.value(*m.libvirt_version);
    else
        null_value(j);
    j.field(key::accelerator, m.accelerator);
    j.field(key::backend, m.backend);
    j.field(key::vcpus, m.vcpus);
    j.field(key::memory_mb, m.memory_mb);
    j.field(key::lock, m.lock);
    j.field(key::pause, m.pause);
    j.field(key::clock, m.clock);
    j.field(key::pinning, m.pinning);
    j.field(key::guest_tsc_hz, m.guest_tsc_hz);
    j.field(key::workload, m.workload);
    j.field(key::kernel_append, m.kernel_append);
}

}  // namespace

std::string meta_json(const Meta& m) {
    JsonWriter j;
    j.begin_object();
    j.field(key::format, kResultsFormat);
    j.field(key::run_id, m.run_id);
    j.field(key::date, m.date);
    j.field(key::git_rev, m.git_rev);
    host_json(j, m.host);
    vm_json(j, m);
    plan_json(j, m);
    j.field(key::duration_s, m.duration_s);
    j.field(key::warmup_s, m.warmup_s);
    j.field(key::vm_name, m.vm_name);
    j.key(key::vcpu_thread_ids).begin_array();
    for (uint64_t t : m.vcpu_thread_ids) j.value(t);
    j.end_array();
    j.field(key::cpu_mapping, m.cpu_mapping);
    j.field(key::guest_build_id, m.guest_build_id);
    j.field(key::guest_hypervisor, m.guest_hypervisor);
    j.field(key::guest, m.guest);
    text_or_null(j, key::guest_kernel, m.guest_kernel);
    j.field(key::runner, m.runner_version);
    freeze_injection_json(j, m);
    neighbours_json(j, m.neighbours);
    text_or_null(j, key::timeline_source, m.timeline_source);
    trace_meta_json(j, m);
    j.end_object();
    return j.take() + "\n";
}

void write_file(const std::string& path, const std::string& content) {
    const std::string tmp = path + ".tmp";
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
    size_t off = 0;
    while (off < content.size()) {
        ssize_t n = ::write(fd, content.data() + off, content.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = errno;
            close(fd);
            unlink(tmp.c_str());
            throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(e));
        }
        off += size_t(n);
    }
    fdatasync(fd);
    close(fd);
    if (rename(tmp.c_str(), path.c_str()) != 0)
        throw std::runtime_error("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
}

std::string make_run_dir(const std::string& output, std::string& run_id) {
    std::error_code ec;
    fs::create_directories(output, ec);
    if (ec) throw std::runtime_error("cannot create " + output + ": " + ec.message());
    std::string id = run_id;
    for (int k = 2; fs::exists(fs::path(output) / id); ++k) id = run_id + "-" + std::to_string(k);
    run_id = id;
    fs::path dir = fs::path(output) / id;
    fs::create_directories(dir / "snapshots", ec);
    if (ec) throw std::runtime_error("cannot create " + (dir / "snapshots").string() + ": " + ec.message());
    // results/latest -> <run-id>, replaced atomically.
    fs::path link = fs::path(output) / "latest";
    fs::path tmp = fs::path(output) / (".latest-" + std::to_string(getpid()));
    fs::remove(tmp, ec);
    fs::create_directory_symlink(id, tmp, ec);
    if (ec) throw std::runtime_error("cannot create the symlink " + tmp.string() + ": " + ec.message());
    if (fs::exists(fs::symlink_status(link)) && !fs::is_symlink(fs::symlink_status(link))) {
        fs::remove(tmp, ec);
        throw std::runtime_error(link.string() + " exists and is not a symlink: move it away");
    }
    fs::rename(tmp, link, ec);
    if (ec) throw std::runtime_error("cannot point " + link.string() + " at " + id + ": " + ec.message());
    return dir.string();
}

std::string iso_utc(uint64_t realtime_ns) {
    time_t t = time_t(realtime_ns / 1'000'000'000ull);
    struct tm tm;
    gmtime_r(&t, &tm);
    char buf[32];
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

}  // namespace spinlab::run
