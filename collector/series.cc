// collector/series.cc: see series.h.
#include "series.h"

#include <thread>

#include "commands.h"
#include "heartbeat.h"
#include "hostlib/error.h"

namespace spinlab::collect {
namespace {

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds ms(double seconds) {
    return std::chrono::milliseconds(int64_t(seconds * 1000.0 + 0.5));
}

}  // namespace

namespace {

SeriesEnd series_loop(Session& s, const Config& c, SeriesEnd& end,
                      const std::function<void(uint64_t, const Snapshot&,
                                               const std::optional<ClockSample>&)>& on_snapshot);

}  // namespace

SeriesEnd run_series(Session& s, const Config& c,
                     const std::function<void(uint64_t, const Snapshot&,
                                              const std::optional<ClockSample>&)>& on_snapshot) {
    install_stop_handlers();
    SeriesEnd end;
    try {
        return series_loop(s, c, end, on_snapshot);
    } catch (const CollectError& e) {
        if (e.exit_code() != kExitCorrupt) throw;
        end.reason = e.what();
        end.corrupt = true;
        return end;
    }
}

namespace {

SeriesEnd series_loop(Session& s, const Config& c, SeriesEnd& end,
                      const std::function<void(uint64_t, const Snapshot&,
                                               const std::optional<ClockSample>&)>& on_snapshot) {
    RegionReader* region = nullptr;
    if (s.has_region()) region = &s.region();
    Heartbeat heartbeat(ms(c.stall_timeout_s));
    const Clock::time_point start = Clock::now();
    const auto interval = ms(c.interval_s);
    Clock::time_point next = start;

    auto guest_gone = [&]() -> std::optional<std::string> {
        if (!region) return std::nullopt;
        std::optional<uint64_t> count;
        if (auto ck = region->clock()) count = ck->count;
        return heartbeat.observe(region->unlinked(), count, Clock::now());
    };

    for (;;) {
        if (auto why = guest_gone()) {
            end.reason = "the guest went away: " + *why;
            end.guest_gone = true;
            return end;
        }
        Snapshot snap;
        try {
            snap = s.snapshot();
        } catch (const CollectError& e) {
            // Through the channel, a dead guest shows as no answer or a closed connection.
            if (e.exit_code() != kExitNoVm) throw;
            end.reason = std::string("the guest went away: ") + e.what();
            end.guest_gone = true;
            return end;
        }
        std::optional<ClockSample> sample;
        if (region) {
            // Wait for one publication, at most three periods and half an interval.
            auto ck = region->clock();
            if (ck && ck->count > 0) {
                auto wait = std::min(std::chrono::milliseconds(3 * (ck->period_us / 1000 + 1)),
                                     interval / 2);
                sample = region->sample_clock(wait);
                if (sample) end.clock_samples.push_back(*sample);
            }
        }
        on_snapshot(end.snapshots, snap, sample);
        end.snapshots++;
        if (c.count && end.snapshots >= c.count) {
            end.reason = "count reached";
            return end;
        }
        next += interval;
        for (;;) {
            auto now = Clock::now();
            if (stop_requested()) {
                end.reason = "stopped by signal";
                return end;
            }
            if (c.duration_s > 0 && now - start >= ms(c.duration_s)) {
                end.reason = "duration reached";
                return end;
            }
            if (now >= next) break;
            if (auto why = guest_gone()) {
                end.reason = "the guest went away: " + *why;
                end.guest_gone = true;
                return end;
            }
            std::this_thread::sleep_for(std::min<Clock::duration>(next - now, std::chrono::milliseconds(50)));
        }
    }
}

}  // namespace

}  // namespace spinlab::collect
