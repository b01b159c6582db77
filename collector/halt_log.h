// collector/halt_log.h: the guest's halt spans (perfdata.h HaltLog), drained from the shared
// region while the guest runs.
//
// Each CPU of spinlab's kernel logs every `hlt` it waits in (the idle loop, a lock=pvqspin
// waiter) as a span of guest TSC, in a ring of kHaltLogSpans. The host's timeline sees a vCPU
// thread asleep both when its guest halted and when it blocked inside QEMU (TCG) while its guest
// had work; these spans, mapped to host time through clock.json, tell the two apart.
//
// Two layers:
// - drain_halt_log: pure. Given one CPU's log copied by perfdata.h's protocol (written, the
//   spans not yet read, written again, then halted_since) and the reader's state for that CPU,
//   it returns the new spans and what was lost, and checks every word (the guest is not
//   trusted: docs/architecture.md, "What the host trusts"). A check that fails refuses that
//   CPU's log from the last good exit on; what was accepted before stays.
// - HaltRecorder: a thread ("spinlab-halts", nice 19) with its own RegionReader that drains
//   every CPU's log as often as its guest halts (DrainPace: 5 to 250 ms apart), and once more in
//   stop(); halts() gives every CPU's record.
#pragma once
#include <spinlab/perfdata.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace spinlab::collect {

class RegionReader;

// One CPU's HaltLog as a reader copied it (RegionReader::halt_log): `recording`, then `written`
// (acquire), the spans from the reader's next unread one on, `written` again after them (an
// acquire fence between), then `halted_since`. Only the ring slots of spans
// [max(from, written_before - kHaltLogSpans), written_before) are filled; the rest are zero.
struct HaltLogCopy {
    uint32_t recording = 0;
    uint64_t written_before = 0;
    uint64_t written_after = 0;
    uint64_t halted_since = 0;
    std::array<HaltSpan, kHaltLogSpans> spans{};  // by ring slot: span n in spans[n % kHaltLogSpans]
};

// A stretch of guest TSC [from, to) about which something is said; to nullopt: to the end of
// the record.
struct HaltRange {
    uint64_t from = 0;
    std::optional<uint64_t> to;
    uint64_t spans = 0;  // a lost range: how many spans it stands for (0: not counted)
    bool operator==(const HaltRange&) const = default;
};

// What the reader knows of one CPU between drains.
struct HaltReaderState {
    bool recording = false;     // a copy has said recording = 1
    uint64_t next = 0;          // the next span number not read (read or lost)
    uint64_t accepted = 0;      // spans accepted so far
    uint64_t last_enter = 0;    // the last span accepted (both 0 before any)
    uint64_t last_exit = 0;
    // Spans were lost and no span after them has been kept yet: the lost range runs from here
    // to the next span kept (its enter), or to the end of the record.
    std::optional<uint64_t> lost_from;
    uint64_t lost_spans = 0;    // how many spans that open range stands for
    bool refused = false;       // a check failed: this CPU's log is read no more
};

// What one drain found.
struct HaltDrain {
    std::vector<HaltSpan> spans;   // the new spans accepted, in order
    std::vector<HaltRange> lost;   // ranges closed by this drain (spans overwritten unread)
    // The halt in progress at this read (halted_since), nullopt when none: not halted, or the
    // writer had not yet cleared the marker of the span just read.
    std::optional<uint64_t> halted_since;
    // Non-empty: a check failed ("CPU 1's halt span 4711: exit 100 before enter 200"); the CPU's
    // log is refused from the state's last_exit on (state.refused is set).
    std::string refusal;
};

// Drains `copy` of CPU `cpu`'s log into `state` (see the top of this file). Checks, each a
// refusal naming the CPU and the field: recording 0 or 1, and not back to 0 once 1; written
// never going backwards (neither against the last drain's nor within the copy); every span
// exit >= enter and enter >= the previous exit; halted_since 0 or >= the last exit (or the
// enter of the span just accepted, which the writer clears right after it). Span n with
// n + kHaltLogSpans <= written_after was (or may have been) overwritten while it was unread: the
// spans lost become one range [last accepted exit (0 at the start), first kept enter). A CPU
// that does not record (recording 0) gives nothing and its state stays as it is. A refused
// state gives nothing more.
HaltDrain drain_halt_log(uint32_t cpu, const HaltLogCopy& copy, HaltReaderState* state);

// Everything the recorder knows of one CPU's halts.
struct CpuHalts {
    uint32_t cpu = 0;
    bool recording = false;          // the CPU logs its halts; false: nothing is known of them
    std::vector<HaltSpan> spans;     // every span read, in order
    std::vector<HaltRange> lost;     // spans overwritten before they were read (may have halted)
    std::optional<uint64_t> halted_since;  // still halted at the last read, since this TSC
    std::optional<uint64_t> refused_from;  // the log was refused: nothing known from here on
    std::string refusal;             // why (drain_halt_log's message)
};

// Keeps drain_halt_log's results for one CPU as a CpuHalts (the recorder's bookkeeping, pure).
class HaltAccount {
public:
    explicit HaltAccount(uint32_t cpu) { halts_.cpu = cpu; }
    // Drains one copy. Returns the refusal when this copy made one, else "".
    std::string add(const HaltLogCopy& copy);
    // An ending that is not the guest's fault (a recorder error): a range still open, and the
    // time after the last read, are lost to the end of the record.
    void end_lost();
    // The record: an open lost range is in `lost` with no end.
    CpuHalts halts() const;
    const HaltReaderState& state() const { return state_; }

private:
    HaltReaderState state_;
    CpuHalts halts_;
};

// How long the recorder sleeps between drains (pure; tested on its own). Every wake-up of its
// thread may take a vCPU's host CPU (a spinlab-run at 5 ms took 1.1 s of the vCPUs' time in 24 s
// of host-load), so it drains only as often as the guest halts: the next sleep keeps the fullest
// ring about a quarter full at the rate the last drain saw, between `min` and `max`, and grows at
// most twofold from one drain to the next (shrinking at once). An idle CPU halts ~100 times a
// second (its timer tick): 250 ms apart, 25 spans a drain; a burst above ~2,000 halts a second
// between two drains overflows the ring, and is recorded as lost, never guessed.
class DrainPace {
public:
    DrainPace(std::chrono::milliseconds min, std::chrono::milliseconds max) : min_(min), max_(max), next_(min) {}
    // A drain found at most `spans` new spans on any CPU, `since` after the one before.
    void drained(uint64_t spans, std::chrono::nanoseconds since);
    std::chrono::nanoseconds next() const { return next_; }

private:
    std::chrono::nanoseconds min_, max_, next_;
};

class HaltRecorder {
public:
    static constexpr std::chrono::milliseconds kMinInterval{5}, kMaxInterval{250};
    // Maps the region file at `path` (throws CollectError as RegionReader does) and starts the
    // thread, which drains every CPU's log between `min` and `max` apart (DrainPace).
    explicit HaltRecorder(const std::string& path, std::chrono::milliseconds min = kMinInterval,
                          std::chrono::milliseconds max = kMaxInterval);
    ~HaltRecorder();  // stops
    HaltRecorder(const HaltRecorder&) = delete;
    HaltRecorder& operator=(const HaltRecorder&) = delete;

    // Ends the thread, then drains every CPU once more. Idempotent.
    void stop();
    // A drain now, waited for (at most `wait`), so that halts() is not a whole pace behind: the
    // runner asks before it writes halts.csv after a window. False if none came in time (the
    // thread ended, or was not scheduled); halts() is then the last drain's.
    bool drain_now(std::chrono::milliseconds wait = std::chrono::milliseconds(1000));
    // Every CPU's record so far (by CPU number): what the last drain knew.
    std::vector<CpuHalts> halts() const;
    // Why the recorder stopped early ("" while it runs or after a normal stop): the region
    // broke a rule RegionReader checks (a header, a re-layout: a guest reboot). Every CPU's log
    // is then lost from its last read on; what was read before stays. A refused CPU is not an
    // error: its CpuHalts says so, and the others go on.
    std::string error() const;
    // Drains done so far (each reads every CPU).
    uint64_t drains() const { return drains_.load(); }

private:
    void run(DrainPace pace);
    uint64_t drain_all();  // one read of every CPU: the most new spans of one; throws what RegionReader throws

    std::unique_ptr<RegionReader> reader_;  // the thread's; stop()'s once it has ended
    uint64_t generation_ = 0;               // the layout's when attached
    mutable std::mutex mu_;
    std::vector<HaltAccount> accounts_;     // by CPU
    std::string error_;
    bool stopped_ = false;
    std::atomic<bool> stop_{false};
    std::mutex wake_mu_;                  // with wake_: the thread's sleep, cut short by these
    std::condition_variable wake_;
    bool drain_asked_ = false;            // wake_mu_ held
    std::atomic<uint64_t> drains_{0};
    std::thread thread_;
};

}  // namespace spinlab::collect
