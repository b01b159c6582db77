// collector/info_command.cc: `info`: the guest's configuration (through the channel), the
// shared region's header and counters, and the guest-to-host clock fit.
#include <spinlab/sysinfo.h>

#include <cstdio>
#include <cstring>
#include <sstream>

#include "commands.h"
#include "hostlib/error.h"
#include "hostlib/json_writer.h"
#include "report_format.h"

namespace spinlab::collect {
namespace {

std::string text(const char* p, size_t n) { return std::string(p, strnlen(p, n)); }

std::string hex(uint32_t v) {
    char b[16];
    std::snprintf(b, sizeof b, "0x%08x", v);
    return b;
}

void row(std::ostream& o, const std::string& k, const std::string& v) {
    char b[64];
    std::snprintf(b, sizeof b, "  %-22s ", k.c_str());
    o << b << v << "\n";
}

// The guest's configuration, asked over the channel.
void info_guest(Session& s, std::ostream& t, JsonWriter& j) {
    SystemConfiguration g = s.configuration();
    std::string hv = text(g.hypervisor_signature, sizeof g.hypervisor_signature);
    std::string build = text(g.build_id, sizeof g.build_id);
    const char* algo = lock_algorithm_name(LockAlgorithm(g.lock_algorithm));
    const char* clk = clock_source_name(ClockSource(g.clock_source));
    const char* inst = instrument_level_name(InstrumentLevel(g.instrument_level));
    t << "guest (" << s.paths().socket << ")\n";
    row(t, "CPUs", std::to_string(g.cpu_count));
    row(t, "TSC Hz", std::to_string(g.tsc_hz));
    row(t, "lock algorithm", algo);
    row(t, "clock source", clk);
    row(t, "instrumentation", inst);
    row(t, "pause in spin loops", g.pause_enabled ? "on" : "off");
    row(t, "hypervisor", hv.empty() ? "none" : hv);
    row(t, "steal time", g.steal_time ? "yes (LHP classes known)" : "no (LHP class unknown)");
    row(t, "KVM features/hints", hex(g.kvm_features) + " / " + hex(g.kvm_hints));
    row(t, "lock classes", std::to_string(g.lock_class_count) + " of " +
                               std::to_string(g.max_lock_classes));
    row(t, "long wait threshold", std::to_string(g.long_wait_threshold) + " cycles");
    row(t, "lockup bound", g.lockup_cycles ? std::to_string(g.lockup_cycles) + " cycles"
                                           : std::string("off"));
    row(t, "build", build);
    j.key("guest").begin_object()
        .field("cpus", g.cpu_count).field("tsc_hz", g.tsc_hz)
        .field("lock_algorithm", algo).field("clock_source", clk)
        .field("instrumentation", inst).field("pause", bool(g.pause_enabled))
        .field("hypervisor", hv).field("steal_time", bool(g.steal_time))
        .field("kvm_features", g.kvm_features).field("kvm_hints", g.kvm_hints)
        .field("lock_class_count", g.lock_class_count)
        .field("max_lock_classes", g.max_lock_classes).field("hist_buckets", g.hist_buckets)
        .field("long_wait_threshold", g.long_wait_threshold)
        .field("lockup_cycles", g.lockup_cycles).field("build_id", build)
        .end_object();
}

// The shared region's header and the channel server's counters in it.
void info_region(RegionReader& r, std::ostream& t, JsonWriter& j) {
    const RegionLayout& l = r.layout();
    t << "shared region (" << r.path() << ")\n";
    row(t, "generation", std::to_string(l.generation));
    row(t, "size", std::to_string(l.region_size) + " bytes");
    row(t, "CPUs", std::to_string(l.cpu_count));
    row(t, "guest TSC Hz", std::to_string(l.tsc_hz));
    const auto& trace = l.section(RegionSection::kTrace);
    row(t, "trace area", std::to_string(trace.size) + " bytes at " + std::to_string(trace.offset));
    j.key("region").begin_object()
        .field("path", r.path()).field("abi_version", kRegionAbiVersion)
        .field("generation", l.generation).field("size", l.region_size)
        .field("cpus", l.cpu_count).field("tsc_hz", l.tsc_hz)
        .field("trace_offset", trace.offset).field("trace_size", trace.size);
    if (auto ck = r.clock()) {
        row(t, "clock publications", std::to_string(ck->count) + " (every " +
                                         std::to_string(ck->period_us) + " us, CPU " +
                                         std::to_string(ck->cpu) + ")");
        j.field("clock_publications", ck->count).field("clock_period_us", ck->period_us);
    }
    ChannelServerStats cs = r.channel_stats();
    uint64_t rejected = 0;
    for (uint64_t v : cs.rejected) rejected += v;
    row(t, "channel server", std::to_string(cs.requests) + " requests, " +
                                 std::to_string(cs.errors_sent) + " errors sent, " +
                                 std::to_string(rejected) + " frames rejected, " +
                                 std::to_string(cs.skipped_bytes) + " bytes skipped");
    j.key("channel_server").begin_object()
        .field("requests", cs.requests).field("errors_sent", cs.errors_sent)
        .field("skipped_bytes", cs.skipped_bytes).key("rejected").begin_object();
    for (uint32_t e = 1; e < uint32_t(FrameError::kCount); ++e)
        j.field(frame_error_name(FrameError(e)), cs.rejected[e]);
    j.end_object().end_object();
    j.end_object();
}

// The guest-to-host clock fit of `clock_samples` clock samples (at least 2).
void info_clock(RegionReader& r, uint32_t clock_samples, std::ostream& t, JsonWriter& j, std::ostream& err) {
    // Each sample waits for publications until one is bracketed narrowly enough for the
    // fit (a loaded host deschedules the poller across many): up to 20 periods.
    auto ck = r.clock();
    uint32_t period_ms = ck && ck->period_us ? ck->period_us / 1000 + 1 : 100;
    std::vector<ClockSample> samples;
    for (uint32_t i = 0; i < clock_samples; ++i)
        if (auto smp = r.sample_clock(std::chrono::milliseconds(20 * period_ms + 50)))
            samples.push_back(*smp);
    ClockFit fit = fit_clock(samples);
    t << "clock correlation (guest TSC -> host TSC)\n";
    j.key("clock").begin_object().field("samples", uint64_t(samples.size()));
    if (fit.ok) {
        char b[160];
        std::snprintf(b, sizeof b, "%.0f cycles at guest TSC %llu", fit.offset_at_ref(),
                      (unsigned long long)fit.guest_ref);
        row(t, "offset (host - guest)", b);
        if (fit.drift_measured) {
            std::snprintf(b, sizeof b, "%.3f ppm +- %.3f (slope %.9f, %zu step-free segments)",
                          fit.drift_ppm, fit.drift_bound_ppm, fit.slope, fit.drift_segments);
            row(t, "drift", b);
        } else {
            row(t, "drift", "not measured (" + fit.drift_note + ")");
        }
        std::snprintf(b, sizeof b, "+-%.0f cycles (median %.0f), brackets up to %.0f cycles",
                      fit.bound_max, fit.bound_median, fit.max_width);
        row(t, "error bound", b);
        row(t, "samples used", std::to_string(fit.used) + " of " + std::to_string(fit.total));
        j.field("ok", true).field("guest_ref", fit.guest_ref).field("host_ref", fit.host_ref)
            .field("offset", fit.offset_at_ref()).field("slope", fit.slope)
            .field("drift_ppm", fit.drift_ppm).field("drift_measured", fit.drift_measured)
            .field("residual_rms", fit.residual_rms)
            .field("max_width", fit.max_width).field("used", uint64_t(fit.used))
            .field("method", fit.method).field("bound_max", fit.bound_max)
            .field("bound_median", fit.bound_median);
        if (fit.drift_measured) j.field("drift_bound_ppm", fit.drift_bound_ppm);
        else j.field("drift_note", fit.drift_note);
    } else {
        row(t, "no fit", fit.error);
        j.field("ok", false).field("error", fit.error);
        err << "spinlab-collect: no clock fit: " << fit.error << "\n";
    }
    j.end_object();
}

}  // namespace

int run_info(Session& s, const Config& c, std::ostream& out, std::ostream& err) {
    OutputFormat fmt = parse_format(c.format);
    if (fmt == OutputFormat::kCsv)
        throw CollectError(kExitUsage, "info prints table or json, not csv");
    JsonWriter j;
    std::ostringstream t;
    j.begin_object();
    if (s.has_channel()) {
        info_guest(s, t, j);
        s.drop_channel();
    }
    if (s.has_region()) {
        info_region(s.region(), t, j);
        if (c.clock_samples >= 2) info_clock(s.region(), c.clock_samples, t, j, err);
    }
    j.end_object();
    out << (fmt == OutputFormat::kJson ? j.str() + "\n" : t.str());
    return 0;
}

}  // namespace spinlab::collect
