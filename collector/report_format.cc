// collector/report_format.cc: see report_format.h.
#include "report_format.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "hostlib/error.h"
#include "hostlib/results_contract.h"
#include "lockstat/log2_table.h"

namespace spinlab::collect {

namespace key = spinlab::results::key;  // the results' names (hostlib/results_contract.h)

namespace {

// lockstat's formatters follow snprintf's contract: ask for the length, then fill.
// format(buf, cap) is one of them with its table's arguments bound.
template <class Format>
std::string lockstat_table(Format format) {
    size_t n = format(nullptr, 0);
    std::string s(n + 1, '\0');
    format(s.data(), s.size());
    s.resize(n);
    return s;
}

std::string percent(uint64_t count, uint64_t total) {
    char buf[32];
    lockstat::format_percent(count, total, buf, sizeof buf);
    return buf;
}

struct Counter {
    const char* name;
    uint64_t LockClassPerf::*field;
};

constexpr Counter kCounters[] = {
    {key::acquisitions, &LockClassPerf::acquisitions},
    {key::uncontended, &LockClassPerf::uncontended},
    {key::wait_overflow, &LockClassPerf::wait_overflow},
    {key::wait_cycles_sum, &LockClassPerf::wait_cycles_sum},
    {key::wait_cycles_max, &LockClassPerf::wait_cycles_max},
    {key::holds_timed, &LockClassPerf::holds_timed},
    {key::hold_overflow, &LockClassPerf::hold_overflow},
    {key::hold_cycles_sum, &LockClassPerf::hold_cycles_sum},
    {key::hold_cycles_max, &LockClassPerf::hold_cycles_max},
    {key::long_holds, &LockClassPerf::long_holds},
};

void csv_rows(std::string& out, const std::string& cpu, uint32_t id, const std::string& name,
              const LockClassPerf& c) {
    auto row = [&](const char* metric, const std::string& bucket, uint64_t v) {
        out += cpu + "," + std::to_string(id) + "," + name + "," + metric + "," + bucket + "," +
               std::to_string(v) + "\n";
    };
    for (const Counter& k : kCounters) row(k.name, "", c.*k.field);
    for (uint32_t b = 0; b < kHistBuckets; ++b)
        if (c.wait_hist[b]) row(key::wait_hist, std::to_string(b), c.wait_hist[b]);
    for (uint32_t b = 0; b < kHistBuckets; ++b)
        if (c.hold_hist[b]) row(key::hold_hist, std::to_string(b), c.hold_hist[b]);
    for (uint32_t l = 0; l < kLhpClassCount; ++l) {
        row("lhp_count", lhp_class_name(LhpClass(l)), c.lhp_count[l]);
        row("lhp_cycles", lhp_class_name(LhpClass(l)), c.lhp_cycles[l]);
    }
}

// The pv lock's counters by the name perfdata.h gives them (pv_fields' keys, the csv metric).
struct PvCounter {
    const char* name;
    uint64_t PvLockCounters::*field;
};

constexpr PvCounter kPvCounters[] = {
    {key::pv_halts, &PvLockCounters::pv_halts},
    {key::pv_kicks, &PvLockCounters::pv_kicks},
    {key::pv_spurious_wakeups, &PvLockCounters::pv_spurious_wakeups},
    {key::pv_steals, &PvLockCounters::pv_steals},
};

// cpu,,,pv_halts,,N: the pv counters belong to no lock class, so class_id and class are empty.
void pv_csv_rows(std::string& out, const std::string& cpu, const PvLockCounters& p) {
    for (const PvCounter& k : kPvCounters)
        out += cpu + ",,," + k.name + ",," + std::to_string(p.*k.field) + "\n";
}

// Every CPU's pv counters summed (the "all" row, the json's "merged").
PvLockCounters pv_total(const Snapshot& s) {
    PvLockCounters t{};
    for (const CpuSnapshot& c : s.cpus)
        for (const PvCounter& k : kPvCounters) t.*k.field += c.pv.*k.field;
    return t;
}

bool pv_any(const PvLockCounters& p) {
    for (const PvCounter& k : kPvCounters)
        if (p.*k.field) return true;
    return false;
}

// The table's pv section: a row per CPU and one for all of them; a column is as wide as its
// name, at least 12 (a count up to 10^12 keeps the columns straight).
std::string pv_table(const Snapshot& s, const PvLockCounters& total) {
    auto width = [](const PvCounter& k) { return int(std::max<size_t>(std::strlen(k.name), 12)); };
    char cell[48];
    std::string out = "\npv lock (lock=pvqspin)";
    for (const PvCounter& k : kPvCounters) {
        std::snprintf(cell, sizeof cell, "  %*s", width(k), k.name);
        out += cell;
    }
    out += "\n";
    auto row = [&](const std::string& who, const PvLockCounters& p) {
        std::snprintf(cell, sizeof cell, "%-22s", who.c_str());
        out += cell;
        for (const PvCounter& k : kPvCounters) {
            std::snprintf(cell, sizeof cell, "  %*llu", width(k), (unsigned long long)(p.*k.field));
            out += cell;
        }
        out += "\n";
    };
    for (const CpuSnapshot& c : s.cpus) row("CPU " + std::to_string(c.cpu), c.pv);
    row("all " + std::to_string(s.cpus.size()) + " CPUs", total);
    return out;
}

void hist_json(JsonWriter& w, const char* key, const uint64_t (&h)[kHistBuckets]) {
    // Sparse: {"k": count} for non-empty buckets only; k is the exponent of 2^k.
    w.key(key).begin_object();
    for (uint32_t b = 0; b < kHistBuckets; ++b)
        if (h[b]) w.field(std::to_string(b), h[b]);
    w.end_object();
}

}  // namespace

OutputFormat parse_format(const std::string& s) {
    if (s == "table") return OutputFormat::kTable;
    if (s == "csv") return OutputFormat::kCsv;
    if (s == "json") return OutputFormat::kJson;
    throw CollectError(kExitUsage, "--format must be table, csv or json, not '" + s + "'");
}

void perf_json(JsonWriter& w, const LockClassPerf& c) {
    w.begin_object();
    for (const Counter& k : kCounters) w.field(k.name, c.*k.field);
    hist_json(w, key::wait_hist, c.wait_hist);
    hist_json(w, key::hold_hist, c.hold_hist);
    w.key(key::lhp).begin_object();
    for (uint32_t l = 0; l < kLhpClassCount; ++l) {
        w.key(lhp_class_name(LhpClass(l))).begin_object();
        w.field(key::count, c.lhp_count[l]).field(key::cycles, c.lhp_cycles[l]);
        w.end_object();
    }
    w.end_object();
    w.end_object();
}

void pv_fields(JsonWriter& w, const PvLockCounters& p) {
    for (const PvCounter& k : kPvCounters) w.field(k.name, p.*k.field);
}

std::string class_table(const LockClassPerf& c, AcquisitionsCounted counted) {
    std::string out = "wait\n" + lockstat_table([&](char* buf, size_t cap) {
                          return lockstat::format_wait_table(c, buf, cap, counted);
                      });
    out += "hold\n" + lockstat_table([&](char* buf, size_t cap) { return lockstat::format_hold_table(c, buf, cap); });
    uint64_t contended = c.acquisitions - c.uncontended;
    out += "lhp class                count       %         cycles\n";
    for (uint32_t l = 0; l < kLhpClassCount; ++l) {
        char line[128];
        std::snprintf(line, sizeof line, "%-18s %10llu %7s %14llu\n",
                      lhp_class_name(LhpClass(l)), (unsigned long long)c.lhp_count[l],
                      percent(c.lhp_count[l], contended).c_str(),
                      (unsigned long long)c.lhp_cycles[l]);
        out += line;
    }
    return out;
}

namespace {

// lock=pvqspin's counters are shown only when some CPU counted one (other locks count none).
bool any_pv(const Snapshot& s) {
    for (const CpuSnapshot& c : s.cpus)
        if (pv_any(c.pv)) return true;
    return false;
}

std::string class_heading(const QueryView& v, uint32_t id, const std::string& cpus, uint64_t acquisitions) {
    return "\nlock class " + v.names->name(id) + " (id " + std::to_string(id) + "), " + cpus + ": " +
           std::to_string(acquisitions) + " acquisitions\n";
}

std::string query_table(const QueryView& v) {
    const Snapshot& s = *v.snapshot;
    const AcquisitionsCounted counted = acquisitions_counted(s);
    std::string out;
    if (!v.title.empty()) out += v.title + "\n";
    if (v.classes.empty()) out += "no lock acquisitions recorded\n";
    for (uint32_t id : v.classes) {
        LockClassPerf m = merge_cpus(s, id);
        out += class_heading(v, id, "all " + std::to_string(s.cpus.size()) + " CPUs", m.acquisitions);
        out += class_table(m, counted);
        if (!v.per_cpu) continue;
        for (const CpuSnapshot& c : s.cpus) {
            out += class_heading(v, id, "CPU " + std::to_string(c.cpu), c.classes[id].acquisitions);
            out += class_table(c.classes[id], c.acquisitions_counted);
        }
    }
    if (any_pv(s)) out += pv_table(s, pv_total(s));
    return out;
}

std::string query_csv(const QueryView& v) {
    const Snapshot& s = *v.snapshot;
    const AcquisitionsCounted counted = acquisitions_counted(s);
    std::string out = "cpu,class_id,class,metric,bucket,value\n";
    // What every acquisitions row counts: its name in the bucket column, as lhp rows name their
    // class there.
    out += std::string("all,,,") + key::acquisitions_counted + "," + acquisitions_counted_name(counted) + "," +
           std::to_string(uint32_t(counted)) + "\n";
    for (uint32_t id : v.classes) {
        csv_rows(out, "all", id, v.names->name(id), merge_cpus(s, id));
        if (v.per_cpu)
            for (const CpuSnapshot& c : s.cpus) csv_rows(out, std::to_string(c.cpu), id, v.names->name(id), c.classes[id]);
    }
    if (any_pv(s)) {
        pv_csv_rows(out, "all", pv_total(s));
        for (const CpuSnapshot& c : s.cpus) pv_csv_rows(out, std::to_string(c.cpu), c.pv);
    }
    return out;
}

void pv_json(JsonWriter& w, const Snapshot& s) {
    w.key("pv").begin_object().key("merged").begin_object();
    pv_fields(w, pv_total(s));
    w.end_object().key("per_cpu").begin_array();
    for (const CpuSnapshot& c : s.cpus) {
        w.begin_object().field(key::cpu, c.cpu);
        pv_fields(w, c.pv);
        w.end_object();
    }
    w.end_array().end_object();
}

std::string query_json(const QueryView& v) {
    const Snapshot& s = *v.snapshot;
    JsonWriter w;
    w.begin_object().field(key::cpus, uint32_t(s.cpus.size()));
    w.field(key::acquisitions_counted, acquisitions_counted_name(acquisitions_counted(s))).key(key::classes).begin_array();
    for (uint32_t id : v.classes) {
        w.begin_object().field("id", id).field(key::name, v.names->name(id));
        w.key("merged");
        perf_json(w, merge_cpus(s, id));
        if (v.per_cpu) {
            w.key("per_cpu").begin_array();
            for (const CpuSnapshot& c : s.cpus) {
                w.begin_object().field(key::cpu, c.cpu).key("perf");
                perf_json(w, c.classes[id]);
                w.end_object();
            }
            w.end_array();
        }
        w.end_object();
    }
    w.end_array();
    if (any_pv(s)) pv_json(w, s);
    w.end_object();
    return w.take() + "\n";
}

}  // namespace

std::string format_query(const QueryView& v, OutputFormat f) {
    switch (f) {
        case OutputFormat::kTable: return query_table(v);
        case OutputFormat::kCsv: return query_csv(v);
        case OutputFormat::kJson: return query_json(v);
    }
    return {};
}

}  // namespace spinlab::collect
