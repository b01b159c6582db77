// How fast the freezer acts, from the freeze record: distributions (count, min, median, p99,
// max, in ms) of
//   request_late  begin - planned_begin   the injector's timer lateness
//   write         marked - begin          how long the freeze write took (the mark lands inside)
//   stop          stopped - begin         for threads on CPU at the request: until they switched out
//   notify        frozen - begin          until we saw the kernel's "frozen" notification
//   thaw_write    thawed - end            how long the thaw write took (the thread may run after it)
//   applied       thawed - marked         the freeze as the freezer applied it, write to write,
//                                         minus its planned length: how much longer than asked
//   resume        resumed - end           from the thaw request until the thread ran again
// plus the count of threads off CPU at the request (stopped <= marked: stopped by the mark).
// `spinlab-load freeze --latency-json` writes it; `make bench` runs it (scripts/bench-freeze.sh).
// Pure: no I/O.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "freeze_record.h"
#include "hostlib/json_writer.h"

namespace spinlab::load {

struct Distribution {
    size_t count = 0;
    double min_ms = 0, median_ms = 0, p99_ms = 0, max_ms = 0;
};
// Nearest-rank percentiles; all zero when empty.
Distribution distribution(std::vector<double> samples_ms);
// As the value of the current key: {"count":N,"min<unit>":..,"median<unit>":..,"p99<unit>":..,
// "max<unit>":..}, each with `decimals` digits after the point. The one JSON shape of a
// distribution (--latency-json: unit "_ms"; --vcpu-state-latency-json: unit "", in us).
void write_distribution(collect::JsonWriter& w, const Distribution& d, const std::string& unit, int decimals);

class FreezeLatency {
public:
    explicit FreezeLatency(double ticks_per_ms) : ticks_per_ms_(ticks_per_ms) {}
    void add(const FreezeRecord& r);
    // {"freezes":N,"effective_ok":N,"off_cpu_at_request":N,"request_late":{...},"stop":{...},...}
    std::string json() const;
    // One line for stderr: medians and maxima.
    std::string summary() const;

private:
    double ms(uint64_t from, uint64_t to) const;
    double ticks_per_ms_;
    size_t freezes_ = 0, ok_ = 0, off_at_request_ = 0;
    std::vector<double> request_late_, write_, thaw_write_, applied_excess_, stop_, notify_, resume_;
};

}  // namespace spinlab::load
