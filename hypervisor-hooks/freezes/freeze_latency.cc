#include "freeze_latency.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace spinlab::load {

Distribution distribution(std::vector<double> s) {
    Distribution d;
    d.count = s.size();
    if (s.empty()) return d;
    std::sort(s.begin(), s.end());
    auto rank = [&](double p) { return s[static_cast<size_t>(std::ceil(p * s.size())) - 1]; };
    d.min_ms = s.front();
    d.median_ms = rank(0.5);
    d.p99_ms = rank(0.99);
    d.max_ms = s.back();
    return d;
}

double FreezeLatency::ms(uint64_t from, uint64_t to) const {
    return (static_cast<double>(to) - static_cast<double>(from)) / ticks_per_ms_;
}

void FreezeLatency::add(const FreezeRecord& r) {
    ++freezes_;
    request_late_.push_back(std::max(0.0, ms(r.planned_begin_tsc, r.begin_tsc)));
    write_.push_back(ms(r.begin_tsc, r.marked_tsc));
    if (r.thawed_tsc) {
        thaw_write_.push_back(ms(r.end_tsc, r.thawed_tsc));
        applied_excess_.push_back(ms(r.marked_tsc, r.thawed_tsc) - ms(r.planned_begin_tsc, r.planned_end_tsc));
    }
    if (r.frozen_tsc) notify_.push_back(ms(r.begin_tsc, r.frozen_tsc));
    const EffectiveWindow& w = r.effective;
    if (w.status != EffectiveStatus::kOk) return;
    ++ok_;
    if (w.stopped <= r.marked_tsc) {  // off CPU when the mark landed
        ++off_at_request_;
    } else {
        stop_.push_back(ms(r.begin_tsc, w.stopped));
    }
    resume_.push_back(ms(r.end_tsc, w.resumed));
}

void write_distribution(collect::JsonWriter& w, const Distribution& d, const std::string& unit, int decimals) {
    w.begin_object().field("count", uint64_t(d.count));
    w.key("min" + unit).fixed(d.min_ms, decimals);
    w.key("median" + unit).fixed(d.median_ms, decimals);
    w.key("p99" + unit).fixed(d.p99_ms, decimals);
    w.key("max" + unit).fixed(d.max_ms, decimals);
    w.end_object();
}

std::string FreezeLatency::json() const {
    collect::JsonWriter w;
    w.begin_object()
        .field("freezes", uint64_t(freezes_))
        .field("effective_ok", uint64_t(ok_))
        .field("off_cpu_at_request", uint64_t(off_at_request_));
    const std::pair<const char*, const std::vector<double>*> all[] = {
        {"request_late", &request_late_}, {"write", &write_}, {"thaw_write", &thaw_write_},
        {"applied_excess", &applied_excess_}, {"stop", &stop_}, {"notify", &notify_}, {"resume", &resume_}};
    for (const auto& [name, samples] : all) {
        w.key(name);
        write_distribution(w, distribution(*samples), "_ms", 4);
    }
    w.end_object();
    return w.take();
}

std::string FreezeLatency::summary() const {
    std::ostringstream out;
    out.precision(3);
    out << std::fixed;
    const std::pair<const char*, const std::vector<double>*> all[] = {
        {"request late", &request_late_}, {"write", &write_}, {"thaw write", &thaw_write_},
        {"applied - planned", &applied_excess_}, {"stop", &stop_}, {"notify", &notify_}, {"resume", &resume_}};
    const char* sep = "";
    for (const auto& [name, samples] : all) {
        Distribution d = distribution(*samples);
        out << sep << name << " min " << d.min_ms << " median " << d.median_ms << " max " << d.max_ms
            << " ms (" << d.count << ")";
        sep = "; ";
    }
    return out.str();
}

}  // namespace spinlab::load
