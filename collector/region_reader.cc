// collector/region_reader.cc: see region_reader.h.
#include "region_reader.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "hostlib/error.h"
#include "hostlib/host_tsc.h"

namespace spinlab::collect {
namespace {

// Word-by-word relaxed loads: each 64-bit counter is read whole (perfdata.h's protocol), and
// the compiler may not assume the shared bytes hold still.
void copy_words(void* dst, const void* src, size_t bytes) {
    auto* d = static_cast<uint64_t*>(dst);
    auto* s = static_cast<const uint64_t*>(src);
    for (size_t i = 0; i < bytes / 8; ++i) d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

// The header field a region_parse error is about.
const char* region_field(RegionError e) {
    switch (e) {
        case RegionError::kTooSmall: return "the mapping is smaller than a header";
        case RegionError::kBadHeaderSize: return "header_size or section_count";
        case RegionError::kBadRegionSize: return "region_size";
        case RegionError::kBadCpuCount: return "cpu_count";
        case RegionError::kBadSection: return "the section table";
        default: return "the header";
    }
}

// A CPU's acquisitions_counted word, which the guest writes once at init: a value the ABI does
// not name is a corrupt region (every percentage would be of an unknown total).
AcquisitionsCounted checked_counted(const std::string& path, uint32_t cpu, const uint32_t& word) {
    const uint32_t v = __atomic_load_n(&word, __ATOMIC_RELAXED);
    if (v < enum_count(kAcquisitionsCountedNames)) return AcquisitionsCounted(v);
    std::string known;
    for (const EnumName& e : kAcquisitionsCountedNames)
        known += (known.empty() ? "" : ", ") + std::to_string(e.value) + " (" + e.name + ")";
    throw CollectError(kExitCorrupt, corrupt_region_message(path, "cpu " + std::to_string(cpu) +
                                                                      ": acquisitions_counted is " +
                                                                      std::to_string(v) + ", not one of " + known));
}

bool transient(RegionError e) { return e == RegionError::kBusy || e == RegionError::kBadMagic; }

// region_parse until it gives a lasting answer or `wait` has passed.
RegionError parse_waiting(const uint8_t* base, size_t size, std::chrono::milliseconds wait,
                          RegionLayout* layout) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (;;) {
        const RegionError e = region_parse(base, size, layout);
        if (!transient(e) || std::chrono::steady_clock::now() >= deadline) return e;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

}  // namespace

CollectError region_error(const std::string& path, RegionError e, const void* base) {
    RegionHeader h;
    std::memcpy(&h, base, sizeof h);  // once: the numbers printed are the ones judged
    if (e == RegionError::kBadVersion || e == RegionError::kBadPerfData)
        return CollectError(kExitAbi,
                            "ABI version mismatch: the shared region " + path + " has region ABI " +
                                std::to_string(h.abi_version) + " / perf data " +
                                std::to_string(h.perfdata_version) + ", this collector reads " +
                                std::to_string(kRegionAbiVersion) + " / " +
                                std::to_string(kPerfDataVersion));
    return CollectError(kExitCorrupt, corrupt_region_message(path, std::string("region header: ") +
                                                                       region_field(e) + ": " +
                                                                       region_error_name(e)));
}

std::string check_clock(const ClockReading& r, const RegionLayout& layout, const ClockReading* last) {
    if (r.cpu >= layout.cpu_count)
        return "clock publication: cpu " + std::to_string(r.cpu) + " is not below cpu_count " +
               std::to_string(layout.cpu_count);
    if (r.period_us == 0 || r.period_us > kMaxClockPeriodUs)
        return "cpu " + std::to_string(r.cpu) + ": clock publication: period_us " +
               std::to_string(r.period_us) + " is outside 1.." + std::to_string(kMaxClockPeriodUs);
    if (last && r.count < last->count)
        return "cpu " + std::to_string(r.cpu) + ": clock publication: count went backwards (" +
               std::to_string(r.count) + " after " + std::to_string(last->count) + ")";
    return check_clock_reference(r);
}

// The reference clock beside a publication (ClockArea::ref_*): a source the ABI names, a tick
// of 1 fs to 100 ns (the HPET specification's limit), read between the two TSC reads.
std::string check_clock_reference(const ClockReading& r) {
    const std::string at = "cpu " + std::to_string(r.cpu) + ": clock publication: ";
    if (r.ref_source >= enum_count(kClockReferenceNames))
        return at + "ref_source " + std::to_string(r.ref_source) + " is not one the ABI names";
    if (ClockReference(r.ref_source) == ClockReference::kNone) return "";
    if (r.ref_period_fs == 0 || r.ref_period_fs > kMaxClockRefPeriodFs)
        return at + "ref_period_fs " + std::to_string(r.ref_period_fs) + " is outside 1.." +
               std::to_string(kMaxClockRefPeriodFs);
    if (r.ref_guest_tsc > r.guest_tsc)
        return at + "ref_guest_tsc " + std::to_string(r.ref_guest_tsc) + " is after guest_tsc " +
               std::to_string(r.guest_tsc) + " (the reference is read between them)";
    return "";
}

RegionLayout attach_layout(const MappedRegion& map, std::chrono::milliseconds wait) {
    RegionLayout layout;
    const RegionError e = parse_waiting(map.data(), map.size(), wait, &layout);
    if (e == RegionError::kNone) return layout;
    if (transient(e))
        throw CollectError(kExitNoVm, "the guest has not set up the shared region " + map.path() +
                                          " within " + std::to_string(wait.count()) + " ms (" +
                                          region_error_name(e) + ")");
    throw region_error(map.path(), e, map.data());  // another ABI (exit 4) or a broken header
}

RegionReader::RegionReader(const std::string& path, std::chrono::milliseconds timeout)
    : path_(path), map_(path, MappedRegion::Access::kRead), base_(map_.data()), mapped_(map_.size()),
      layout_(attach_layout(map_, timeout)) {}

RegionReader::~RegionReader() = default;

// The guest re-laid the region out (a new generation: a reboot) after we attached.
void RegionReader::reparse() {
    const RegionError e = parse_waiting(base_, mapped_, std::chrono::milliseconds(1000), &layout_);
    if (e == RegionError::kNone) {
        last_clock_.reset();  // a new layout: its clock count starts again
        return;
    }
    if (e == RegionError::kBadVersion || e == RegionError::kBadPerfData)
        throw region_error(path_, e, base_);  // another kernel (a reboot into it): exit 4
    // It was valid when we attached: the guest broke it since.
    throw CollectError(kExitCorrupt,
                       corrupt_region_message(path_, std::string("region header, after a new "
                                                                 "generation: ") +
                                                         region_field(e) + ": " + region_error_name(e)));
}

Snapshot RegionReader::snapshot() {
    for (int attempt = 0; attempt < 100; ++attempt) {
        Snapshot s;
        s.host_ns = realtime_ns();
        s.host_tsc = host_tsc();
        s.cpus.reserve(layout_.cpu_count);
        for (uint32_t k = 0; k < layout_.cpu_count; ++k) {
            const CpuPerfData* src = region_cpu(base_, layout_, k);
            CpuSnapshot c = empty_cpu(k);
            // A CPU that has not run its lockstat init yet has no magic: it recorded nothing.
            if (__atomic_load_n(&src->magic, __ATOMIC_RELAXED) == kPerfDataMagic) {
                c.resets = __atomic_load_n(&src->resets, __ATOMIC_RELAXED);
                c.apic_id = __atomic_load_n(&src->apic_id, __ATOMIC_RELAXED);
                c.acquisitions_counted = checked_counted(path_, k, src->acquisitions_counted);
                c.initialised = true;
                copy_words(c.classes.data(), src->classes, sizeof src->classes);
                copy_words(&c.pv, &src->pv, sizeof src->pv);
            }
            s.cpus.push_back(std::move(c));
        }
        s.read_cycles = host_tsc() - s.host_tsc;
        if (region_end_read(base_, layout_) == RegionError::kNone) return s;
        reparse();  // re-laid out (guest reboot): read again
    }
    throw CollectError(kExitCorrupt, corrupt_region_message(path_, "region header: generation "
                                                                   "changed at each of 100 reads"));
}

RegionReader::HaltRead RegionReader::halt_log(uint32_t cpu, uint64_t from, HaltLogCopy* out) {
    if (cpu >= layout_.cpu_count)
        throw CollectError(kExitFailure, "halt log of CPU " + std::to_string(cpu) + ": the region has " +
                                             std::to_string(layout_.cpu_count) + " CPUs");
    const CpuPerfData* src = region_cpu(base_, layout_, cpu);
    // region_parse put cpu_count blocks of at least sizeof(CpuPerfData) inside the mapping; say
    // so here too, where the address is made.
    const auto at = size_t(reinterpret_cast<const uint8_t*>(src) - base_);
    if (at > mapped_ || mapped_ - at < sizeof(CpuPerfData))
        throw CollectError(kExitCorrupt, corrupt_region_message(path_, "cpu " + std::to_string(cpu) +
                                                                           ": perf data outside the mapping"));
    *out = HaltLogCopy{};
    const bool initialised = __atomic_load_n(&src->magic, __ATOMIC_RELAXED) == kPerfDataMagic;
    const HaltLog& log = src->halts;
    if (initialised) out->recording = __atomic_load_n(&log.recording, __ATOMIC_RELAXED);
    if (out->recording != 0) {
        const uint64_t w1 = __atomic_load_n(&log.written, __ATOMIC_ACQUIRE);
        out->written_before = w1;
        // The spans not yet read that the ring can still hold; none when `written` went back
        // (drain_halt_log says so).
        const uint64_t first = std::max(from, w1 >= kHaltLogSpans ? w1 - kHaltLogSpans : 0);
        for (uint64_t n = first; n < w1; ++n) {
            const HaltSpan& s = log.spans[n % kHaltLogSpans];
            HaltSpan& d = out->spans[n % kHaltLogSpans];
            d.enter_tsc = __atomic_load_n(&s.enter_tsc, __ATOMIC_RELAXED);
            d.exit_tsc = __atomic_load_n(&s.exit_tsc, __ATOMIC_RELAXED);
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);  // the span loads above before the re-read
        out->written_after = __atomic_load_n(&log.written, __ATOMIC_ACQUIRE);
        out->halted_since = __atomic_load_n(&log.halted_since, __ATOMIC_RELAXED);  // after it
    }
    if (region_end_read(base_, layout_) == RegionError::kNone)
        return initialised ? HaltRead::kRead : HaltRead::kNotInitialised;
    reparse();  // throws when the new header breaks a rule
    *out = HaltLogCopy{};
    return HaltRead::kRelaidOut;
}

const ClockArea* RegionReader::clock_area() const {
    return reinterpret_cast<const ClockArea*>(base_ + layout_.section(RegionSection::kClock).offset);
}

bool RegionReader::read_clock(ClockReading* r) {
    if (!clock_try_read(clock_area(), r)) return false;
    // Laid out but not yet published (count 0: a guest that publishes from a thread of its own,
    // as a Linux guest's agent does, after the layout): no reading yet, not a corrupt one.
    if (r->count == 0 && r->guest_tsc == 0) return false;
    std::string bad = check_clock(*r, layout_, last_clock_ ? &*last_clock_ : nullptr);
    if (!bad.empty() && last_clock_ && region_end_read(base_, layout_) != RegionError::kNone) {
        // A count below the last is a reboot when the generation moved: start over there.
        reparse();
        bad = check_clock(*r, layout_, nullptr);
    }
    if (!bad.empty()) throw CollectError(kExitCorrupt, corrupt_region_message(path_, bad));
    last_clock_ = *r;
    return true;
}

std::optional<ClockReading> RegionReader::clock() {
    ClockReading r;
    for (int i = 0; i < 1000; ++i)
        if (read_clock(&r)) return r;
    return std::nullopt;
}

std::optional<ClockSample> RegionReader::sample_clock(std::chrono::microseconds max_wait,
                                                     uint64_t good_width) {
    // A bracket is only as narrow as our polls are dense: when this thread was descheduled
    // between two polls the bracket spans the gap. Try again until one is narrower than
    // good_width, and return the narrowest seen when time runs out.
    auto deadline = std::chrono::steady_clock::now() + max_wait;
    std::optional<ClockSample> best;
    while (std::chrono::steady_clock::now() < deadline) {
        auto s = sample_once(deadline);
        if (!s) break;
        if (!best || s->host_after - s->host_before < best->host_after - best->host_before)
            best = s;
        if (best->host_after - best->host_before <= good_width) break;
    }
    return best;
}

std::optional<ClockSample> RegionReader::sample_once(std::chrono::steady_clock::time_point deadline) {
    // The first consistent read sets the publication we wait to see replaced.
    ClockReading first;
    uint64_t before = 0;
    for (;;) {
        before = host_tsc();
        if (read_clock(&first)) break;
        if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
    }
    uint32_t polls = 0;
    for (;;) {
        uint64_t t0 = host_tsc();
        ClockReading r;
        bool ok = read_clock(&r);
        uint64_t t1 = host_tsc();
        if (ok && r.seq != first.seq) return ClockSample{r.guest_tsc, before, t1};
        // Still the old publication (or one in progress): the next one is later than t0.
        if (ok) before = t0;
        if ((++polls & 1023) == 0 && std::chrono::steady_clock::now() > deadline)
            return std::nullopt;
        _mm_pause();
    }
}

ChannelServerStats RegionReader::channel_stats() const {
    ChannelServerStats s;
    copy_words(&s, base_ + layout_.section(RegionSection::kChannelStats).offset, sizeof s);
    return s;
}

bool RegionReader::unlinked() const { return map_.unlinked(); }

}  // namespace spinlab::collect
