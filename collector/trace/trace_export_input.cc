// collector/trace/trace_export_input.cc: see trace_export_input.h.
#include "trace_export_input.h"

#include <algorithm>
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "hostlib/error.h"
#include "locktrace/buffer_parser.h"
#include "locktrace/trace_file.h"
#include "trace_text.h"

namespace spinlab::collect {

namespace lt = locktrace;

LoadedTrace load_trace(const std::string& path, std::ostream& err) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw CollectError(kExitFailure, "cannot read " + path);
    const std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), {});
    LoadedTrace t;
    const lt::FileError fe = lt::parse_file_header(data.data(), data.size(), &t.header);
    if (fe != lt::FileError::kNone)
        throw CollectError(kExitFailure, path + ": " + trace_file_error_text(fe, data.data(), data.size()));
    if (t.header.cpu_count == 0 || t.header.cpu_count > 4096)
        throw CollectError(kExitFailure, path + ": cpu_count " + std::to_string(t.header.cpu_count) +
                                             " in the file header is not plausible");
    if (t.header.tsc_hz == 0) throw CollectError(kExitFailure, path + ": tsc_hz is 0 in the file header");
    t.cpus.resize(t.header.cpu_count);
    size_t off = sizeof(TraceFileHeader);
    lt::FrameView f;
    lt::FileError e;
    while ((e = lt::next_frame(data.data(), data.size(), &off, &f)) == lt::FileError::kNone) {
        if (f.kind == TraceFrameKind::kCounters) {
            t.counters.assign(f.length / sizeof(TraceCpuCounters), {});
            std::memcpy(t.counters.data(), f.payload, t.counters.size() * sizeof(TraceCpuCounters));
            continue;
        }
        lt::BufferView v;
        uint32_t where = 0;
        const lt::BufferError be = lt::parse_buffer(f.payload, f.length, &v, &where);
        if (be == lt::BufferError::kNone && v.header.cpu >= t.header.cpu_count) {
            err << "spinlab-collect: " << path << ": a buffer of CPU " << v.header.cpu
                << " beyond the file's " << t.header.cpu_count << " CPUs: skipped\n";
            t.damaged++;
            continue;
        }
        if (be != lt::BufferError::kNone) {
            err << "spinlab-collect: " << path << ": a buffer is damaged (" << lt::buffer_error_name(be)
                << " at byte " << where << "): skipped\n";
            t.damaged++;
            continue;
        }
        t.cpus[v.header.cpu].push_back({v.header, std::vector<uint8_t>(f.payload, f.payload + v.header.bytes_used)});
    }
    if (e == lt::FileError::kTruncated) {
        err << "spinlab-collect: " << path << ": the last frame is cut short at byte " << off
            << "; every whole buffer before it is exported\n";
        t.truncated = true;
    } else if (e != lt::FileError::kEnd) {
        err << "spinlab-collect: " << path << ": " << lt::file_error_name(e) << " at byte " << off
            << "; every buffer before it is exported\n";
        t.damaged++;
    }
    for (auto& bufs : t.cpus) {
        std::stable_sort(bufs.begin(), bufs.end(), [](const TraceBuffer& a, const TraceBuffer& b) {
            return a.header.sequence < b.header.sequence;
        });
        bufs.erase(std::unique(bufs.begin(), bufs.end(),
                               [](const TraceBuffer& a, const TraceBuffer& b) {
                                   return a.header.sequence == b.header.sequence;
                               }),
                   bufs.end());
    }
    return t;
}

namespace {

// host.tsc_hz of the results directory's meta.json beside clock.json; 0 when there is none.
uint64_t host_tsc_hz_beside(const std::string& clock_path) {
    const size_t slash = clock_path.rfind('/');
    const std::string meta = (slash == std::string::npos ? "" : clock_path.substr(0, slash + 1)) + "meta.json";
    boost::property_tree::ptree root;
    try {
        boost::property_tree::read_json(meta, root);
        return root.get<uint64_t>("host.tsc_hz", 0);
    } catch (const std::exception&) {
        return 0;
    }
}

}  // namespace

ClockFit read_clock_json(const std::string& path) {
    namespace pt = boost::property_tree;
    pt::ptree root;
    try {
        pt::read_json(path, root);
    } catch (const std::exception& ex) {
        throw CollectError(kExitUsage, "--clock " + path + ": " + ex.what());
    }
    auto bad = [&](const std::string& what) {
        return CollectError(kExitUsage, "--clock " + path + ": " + what);
    };
    if (root.get<int>("format", 0) != 1) throw bad("not a clock.json of format 1");
    ClockFit fit;
    try {
        fit.guest_ref = root.get<uint64_t>("ref_guest_tsc");
        const int64_t offset = root.get<int64_t>("offset_cycles");
        fit.host_ref = fit.guest_ref + uint64_t(offset);
        fit.drift_ppm = root.get<double>("drift_ppm", 0.0);
        fit.slope = 1 + fit.drift_ppm * 1e-6;
        fit.bound_max = root.get<double>("bound_max_cycles", 0.0);
        fit.host_tsc_hz = root.get<uint64_t>("host_tsc_hz", 0);
        if (auto pts = root.get_child_optional("points")) {
            for (const auto& [_, p] : *pts) {
                std::vector<std::string> v;
                for (const auto& [__, x] : p) v.push_back(x.get_value<std::string>());
                if (v.size() != 3) throw bad("a point is not [guest_tsc, offset, half_width]");
                fit.points.push_back({std::stoull(v[0]), std::stoll(v[1]), std::stod(v[2])});
            }
        }
    } catch (const CollectError&) {
        throw;
    } catch (const std::exception& ex) {
        throw bad(ex.what());
    }
    if (fit.points.empty()) {
        // The straight-line summary only: two points on it, bound_max wide.
        const uint64_t g = fit.guest_ref;
        const int64_t off = int64_t(fit.host_ref - fit.guest_ref);
        fit.points.push_back({g, off, fit.bound_max});
    }
    if (fit.host_tsc_hz == 0) fit.host_tsc_hz = host_tsc_hz_beside(path);
    std::sort(fit.points.begin(), fit.points.end(),
              [](const ClockPoint& a, const ClockPoint& b) { return a.guest_tsc < b.guest_tsc; });
    fit.used = fit.points.size();
    fit.ok = true;
    return fit;
}

std::vector<TimelineRow> read_timeline_csv(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw CollectError(kExitUsage, "--timeline: cannot read " + path);
    std::string line;
    std::getline(in, line);
    if (line.rfind("vcpu,tid,state,start_host_tsc,end_host_tsc", 0) != 0)
        throw CollectError(kExitUsage, "--timeline " + path +
                                           ": the header is not vcpu,tid,state,start_host_tsc,end_host_tsc,...");
    std::vector<TimelineRow> rows;
    size_t n = 1;
    while (std::getline(in, line)) {
        n++;
        if (line.empty()) continue;
        std::vector<std::string> c;
        std::stringstream ss(line);
        for (std::string x; std::getline(ss, x, ',');) c.push_back(x);
        try {
            if (c.size() < 5) throw std::invalid_argument("too few columns");
            TimelineRow r{uint32_t(std::stoul(c[0])), std::stoull(c[1]), c[2], std::stoull(c[3]),
                          std::stoull(c[4]), c.size() > 5 ? c[5] : "",
                          c.size() > 6 && !c[6].empty() ? uint32_t(std::stoul(c[6])) : 0};
            if (r.end_host_tsc < r.start_host_tsc) throw std::invalid_argument("end before start");
            rows.push_back(std::move(r));
        } catch (const std::exception& ex) {
            throw CollectError(kExitUsage, "--timeline " + path + " line " + std::to_string(n) + ": " +
                                               ex.what());
        }
    }
    return rows;
}

}  // namespace spinlab::collect
