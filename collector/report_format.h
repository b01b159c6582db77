// collector/report_format.h: the query output in its three formats.
//
// table: per lock class (merged over CPUs, then per CPU on request) the log2 wait table and
//        the hold table, printed by lockstat's formatter (the bytes the guest's spinstat
//        prints), then the LHP classes.
// csv:   one tidy row per number: cpu,class_id,class,metric,bucket,value. cpu is "all" for
//        merged rows; bucket is the histogram exponent k (2^k) or the LHP class name.
// json:  {"cpus":N,"classes":[{"id","name","merged":{...},"per_cpu":[{"cpu",...}]}]}.
// When any CPU's pv lock counters (lock=pvqspin: PvLockCounters) are not zero, each format
// ends with them, per CPU and summed, named as perfdata.h names them (pv_halts, pv_kicks,
// pv_spurious_wakeups, pv_steals): the table a "pv lock" section with a row per CPU and an
// "all N CPUs" row; csv rows cpu,,,pv_halts,,N (no class) for "all" and each CPU; json a
// "pv":{"merged":{pv_fields},"per_cpu":[{"cpu",pv_fields}]} after "classes". When all are zero
// (every other lock) the output is what it was without them.
#pragma once
#include <spinlab/perfdata.h>

#include <string>
#include <vector>

#include "hostlib/json_writer.h"
#include "snapshot.h"

namespace spinlab::collect {

enum class OutputFormat { kTable, kCsv, kJson };

// "table", "csv", "json"; throws CollectError(kExitUsage) naming the bad value otherwise.
OutputFormat parse_format(const std::string& s);

struct QueryView {
    const Snapshot* snapshot;
    const ClassNames* names;
    std::vector<uint32_t> classes;  // class ids to print, in this order
    bool per_cpu = false;           // also print each CPU's numbers
    std::string title;              // table only: a line above everything ("" for none)
};

std::string format_query(const QueryView& v, OutputFormat f);

// One LockClassPerf as a JSON object (counters, sparse histograms, LHP classes); shared with
// the record files.
void perf_json(JsonWriter& w, const LockClassPerf& c);

// One CPU's pv lock counters (lock=pvqspin) as fields of an open object: "pv_halts",
// "pv_kicks", "pv_spurious_wakeups", "pv_steals" (perfdata.h's names); shared with the record
// files and spinlab-run's snapshots.
void pv_fields(JsonWriter& w, const PvLockCounters& p);

// The table of one class: "wait" + wait table, "hold" + hold table, LHP lines. `counted` says
// what c.acquisitions counts, and so what the wait table's percentages are of.
std::string class_table(const LockClassPerf& c,
                        AcquisitionsCounted counted = AcquisitionsCounted::kEveryAcquisition);

}  // namespace spinlab::collect
