// experiments/runner/trace_recording.h: one repetition's trace session, live. Starts the
// session over the channel ([trace]'s parameters), drains the trace area into the repetition's
// trace file on a thread of its own (every 5 ms: the runner's loop sleeps up to 250 ms, longer
// than a busy CPU takes to fill its buffers), and at stop() stops the session (every CPU
// flushes its last buffer), drains the rest and writes the exact loss counters into the file.
// Destroyed without stop() (an error, a signal): the session is stopped all the same.
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "guest.h"
#include "hostlib/error.h"
#include "trace/trace_recorder.h"

namespace spinlab::run {

class TraceRecording {
public:
    // Throws std::runtime_error saying why the guest refused the session.
    TraceRecording(Guest& guest, const TraceSessionInformation& params, const TraceStackInformation& stacks,
                   const std::string& path);
    ~TraceRecording();
    TraceRecording(const TraceRecording&) = delete;
    TraceRecording& operator=(const TraceRecording&) = delete;

    // Stops the session and completes the file. Idempotent. Throws collect::CollectError when
    // the guest does not answer or the drain failed (kExitCorrupt: a corrupt region, named); the
    // file keeps every buffer taken so far and the counters.
    void stop();

private:
    void halt_drainer();

    Guest& guest_;
    std::unique_ptr<collect::TraceRecorder> recorder_;
    std::atomic<bool> stop_drainer_{false};
    std::thread drainer_;
    std::string drain_error_;
    int drain_error_code_ = collect::kExitFailure;  // kExitCorrupt: the region broke its rules
    bool session_running_ = false;
    bool finished_ = false;
};

}  // namespace spinlab::run
