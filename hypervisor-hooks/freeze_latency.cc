#include "freeze_latency.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
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

namespace {
void put(std::ostringstream& out, const char* name, const std::vector<double>& samples) {
    Distribution d = distribution(samples);
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  ",\"%s\":{\"count\":%zu,\"min_ms\":%.4f,\"median_ms\":%.4f,\"p99_ms\":%.4f,\"max_ms\":%.4f}",
                  name, d.count, d.min_ms, d.median_ms, d.p99_ms, d.max_ms);
    out << buf;
}
}  // namespace

std::string FreezeLatency::json() const {
    std::ostringstream out;
    out << "{\"freezes\":" << freezes_ << ",\"effective_ok\":" << ok_
        << ",\"off_cpu_at_request\":" << off_at_request_;
    put(out, "request_late", request_late_);
    put(out, "write", write_);
    put(out, "stop", stop_);
    put(out, "notify", notify_);
    put(out, "resume", resume_);
    out << "}";
    return out.str();
}

std::string FreezeLatency::summary() const {
    std::ostringstream out;
    out.precision(3);
    out << std::fixed;
    const std::pair<const char*, const std::vector<double>*> all[] = {
        {"request late", &request_late_}, {"write", &write_}, {"stop", &stop_}, {"notify", &notify_}, {"resume", &resume_}};
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
