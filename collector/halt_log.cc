// collector/halt_log.cc: see halt_log.h.
#include "halt_log.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

#include "hostlib/error.h"
#include "region_reader.h"

namespace spinlab::collect {
namespace {

// The recorder sleeps nearly all the time and needs no precise moment: the lowest priority,
// which wakes without preempting a vCPU (as the clock sampler's reading thread).
constexpr int kRecorderNice = 19;
// A copy during which the writer logged more spans is taken again (its halted_since may then be
// the enter of a span not in the copy), up to this many times.
constexpr int kHaltCopyTries = 4;

std::string halt_num(uint64_t v) { return std::to_string(v); }

}  // namespace

HaltDrain drain_halt_log(uint32_t cpu, const HaltLogCopy& c, HaltReaderState* st) {
    HaltDrain d;
    if (st->refused) return d;
    const std::string log = "CPU " + halt_num(cpu) + "'s halt log: ";
    // From here on the CPU's log is not read; an open lost range is inside what is refused.
    auto refuse = [&](std::string why) {
        d.refusal = std::move(why);
        d.halted_since.reset();
        st->refused = true;
        st->lost_from.reset();
        st->lost_spans = 0;
    };
    if (c.recording > 1) {
        refuse(log + "recording is " + halt_num(c.recording) + ", neither 0 nor 1");
        return d;
    }
    if (c.recording == 0) {
        if (st->recording) refuse(log + "recording went from 1 to 0");
        return d;  // a CPU that does not log its halts: nothing is known of them
    }
    st->recording = true;
    const uint64_t w1 = c.written_before, w2 = c.written_after;
    if (w1 < st->next) {
        refuse(log + "written went backwards (" + halt_num(w1) + " after " + halt_num(st->next) + ")");
        return d;
    }
    if (w2 < w1) {
        refuse(log + "written went backwards during the copy (" + halt_num(w2) + " after " + halt_num(w1) + ")");
        return d;
    }
    // Span n is whole if n + kHaltLogSpans > w2: the writer of span w2 may be overwriting span
    // w2 - kHaltLogSpans. Those below were overwritten (or may have been) before they were read.
    const uint64_t whole_from = w2 >= kHaltLogSpans ? w2 - kHaltLogSpans + 1 : 0;
    const uint64_t first = std::max(st->next, whole_from);
    if (const uint64_t lost = std::min(first, w1) - st->next; lost > 0) {
        if (!st->lost_from) st->lost_from = st->last_exit;  // 0 at the start of the record
        st->lost_spans += lost;
    }
    for (uint64_t n = first; n < w1; ++n) {
        const HaltSpan s = c.spans[n % kHaltLogSpans];
        const std::string span = "CPU " + halt_num(cpu) + "'s halt span " + halt_num(n) + ": ";
        if (s.exit_tsc < s.enter_tsc) {
            refuse(span + "exit " + halt_num(s.exit_tsc) + " before enter " + halt_num(s.enter_tsc));
            return d;
        }
        if (s.enter_tsc < st->last_exit) {
            refuse(span + "enter " + halt_num(s.enter_tsc) + " before the previous span's exit " + halt_num(st->last_exit));
            return d;
        }
        if (st->lost_from) {
            d.lost.push_back({*st->lost_from, s.enter_tsc, st->lost_spans});
            st->lost_from.reset();
            st->lost_spans = 0;
        }
        d.spans.push_back(s);
        st->last_enter = s.enter_tsc;
        st->last_exit = s.exit_tsc;
        st->accepted++;
        st->next = n + 1;
    }
    st->next = w1;
    // halted_since is read after the second `written`, and the writer clears it after it
    // bumps `written`: it may still hold the enter of the span just accepted (not a halt in
    // progress). Any other value is a halt that began at or after the last exit.
    const uint64_t h = c.halted_since;
    if (h == 0 || (st->accepted > 0 && h == st->last_enter)) return d;
    if (h < st->last_exit) {
        refuse(log + "halted_since " + halt_num(h) + " is before the last span's exit " + halt_num(st->last_exit));
        return d;
    }
    d.halted_since = h;
    return d;
}

std::string HaltAccount::add(const HaltLogCopy& copy) {
    HaltDrain d = drain_halt_log(halts_.cpu, copy, &state_);
    halts_.recording = state_.recording;
    halts_.spans.insert(halts_.spans.end(), d.spans.begin(), d.spans.end());
    halts_.lost.insert(halts_.lost.end(), d.lost.begin(), d.lost.end());
    halts_.halted_since = d.halted_since;
    if (!d.refusal.empty()) {
        halts_.refused_from = state_.last_exit;
        halts_.refusal = d.refusal;
    }
    return d.refusal;
}

void HaltAccount::end_lost() {
    if (!state_.recording || state_.refused) return;
    if (!state_.lost_from) state_.lost_from = state_.last_exit;
    halts_.halted_since.reset();  // inside the range: from the last exit on, nothing is known
}

CpuHalts HaltAccount::halts() const {
    CpuHalts h = halts_;
    if (state_.lost_from) h.lost.push_back({*state_.lost_from, std::nullopt, state_.lost_spans});
    return h;
}

void DrainPace::drained(uint64_t spans, std::chrono::nanoseconds since) {
    using std::chrono::nanoseconds;
    // A quarter of the ring at the rate seen; no spans at all: as long as allowed.
    constexpr uint64_t kTarget = kHaltLogSpans / 4;
    nanoseconds want = max_;
    if (spans > 0) want = nanoseconds(int64_t(double(since.count()) * double(kTarget) / double(spans)));
    want = std::min(want, 2 * next_);
    next_ = std::clamp(want, nanoseconds(min_), nanoseconds(max_));
}

HaltRecorder::HaltRecorder(const std::string& path, std::chrono::milliseconds min, std::chrono::milliseconds max)
    : reader_(std::make_unique<RegionReader>(path, std::chrono::milliseconds(5000))) {
    generation_ = reader_->layout().generation;
    for (uint32_t k = 0; k < reader_->layout().cpu_count; ++k) accounts_.emplace_back(k);
    thread_ = std::thread([this, pace = DrainPace(min, max)] { run(pace); });
}

HaltRecorder::~HaltRecorder() { stop(); }

void HaltRecorder::stop() {
    {
        std::lock_guard<std::mutex> g(wake_mu_);
        stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    {
        std::lock_guard<std::mutex> g(mu_);
        if (stopped_ || !error_.empty()) {
            stopped_ = true;
            return;
        }
        stopped_ = true;
    }
    try {
        drain_all();  // the thread has ended: its reader is this one's now
    } catch (const std::exception& e) {
        std::lock_guard<std::mutex> g(mu_);
        error_ = e.what();
        for (HaltAccount& a : accounts_) a.end_lost();
    }
}

bool HaltRecorder::drain_now(std::chrono::milliseconds wait) {
    // Two drains after the ask: the one the thread may be in began before it.
    const uint64_t before = drains_.load();
    const auto until = std::chrono::steady_clock::now() + wait;
    while (drains_.load() < before + 2) {
        if (stop_ || std::chrono::steady_clock::now() >= until) return false;
        {
            std::lock_guard<std::mutex> g(wake_mu_);
            drain_asked_ = true;
        }
        wake_.notify_all();
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return true;
}

std::vector<CpuHalts> HaltRecorder::halts() const {
    std::lock_guard<std::mutex> g(mu_);
    std::vector<CpuHalts> out;
    out.reserve(accounts_.size());
    for (const HaltAccount& a : accounts_) out.push_back(a.halts());
    return out;
}

std::string HaltRecorder::error() const {
    std::lock_guard<std::mutex> g(mu_);
    return error_;
}

void HaltRecorder::run(DrainPace pace) {
    pthread_setname_np(pthread_self(), "spinlab-halts");  // how the host's timeline names it
    setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), kRecorderNice);  // this thread only
    using Clock = std::chrono::steady_clock;
    try {
        auto last = Clock::now();
        while (!stop_) {
            const uint64_t spans = drain_all();
            const auto now = Clock::now();
            pace.drained(spans, now - last);
            last = now;
            // Woken early by stop() and drain_now(), never by a timer of its own.
            std::unique_lock<std::mutex> lk(wake_mu_);
            wake_.wait_until(lk, now + pace.next(), [&] { return stop_.load() || drain_asked_; });
            drain_asked_ = false;
        }
    } catch (const std::exception& e) {  // the region broke a rule: keep what was read
        std::lock_guard<std::mutex> g(mu_);
        error_ = e.what();
        for (HaltAccount& a : accounts_) a.end_lost();
    }
}

uint64_t HaltRecorder::drain_all() {
    uint64_t most = 0;
    for (size_t k = 0; k < accounts_.size(); ++k) {
        // Only this thread (or stop(), after it) changes an account's state: read without mu_.
        const HaltReaderState& st = accounts_[k].state();
        if (st.refused) continue;
        HaltLogCopy copy;
        bool read = false;
        for (int attempt = 0; attempt < kHaltCopyTries; ++attempt) {
            const RegionReader::HaltRead r = reader_->halt_log(uint32_t(k), st.next, &copy);
            if (r == RegionReader::HaltRead::kRelaidOut)
                throw std::runtime_error("the guest laid its shared region out again (generation " +
                                         halt_num(generation_) + ", now " + halt_num(reader_->layout().generation) +
                                         ": a reboot); its halts are not read from then on");
            read = r == RegionReader::HaltRead::kRead;
            if (!read || copy.written_before == copy.written_after) break;
        }
        if (!read) continue;  // the CPU's perf data is not initialised yet
        if (copy.written_after > st.next) most = std::max(most, copy.written_after - st.next);
        std::lock_guard<std::mutex> g(mu_);
        accounts_[k].add(copy);
    }
    drains_.fetch_add(1);
    return most;
}

}  // namespace spinlab::collect
