// experiments/runner/trace_recording.cc: see trace_recording.h.
#include "trace_recording.h"

#include <spinlab/status.h>

#include <chrono>
#include <stdexcept>

#include "hostlib/error.h"

namespace spinlab::run {

TraceRecording::TraceRecording(Guest& guest, const TraceSessionInformation& params,
                               const TraceStackInformation& stacks, const std::string& path)
    : guest_(guest) {
    guest_.start_trace(params, stacks);
    session_running_ = true;
    try {
        recorder_ = std::make_unique<collect::TraceRecorder>(guest_.region_path(), path);
    } catch (...) {
        guest_.stop_trace();
        session_running_ = false;
        throw;
    }
    drainer_ = std::thread([this] {
        try {
            while (!stop_drainer_.load(std::memory_order_relaxed))
                if (!recorder_->drain()) std::this_thread::sleep_for(recorder_->poll_interval());
        } catch (const collect::CollectError& e) {
            drain_error_ = e.what();  // a corrupt region, or the file cannot be written
            drain_error_code_ = e.exit_code();
        } catch (const std::exception& e) {
            drain_error_ = e.what();
        }
    });
}

void TraceRecording::halt_drainer() {
    stop_drainer_.store(true);
    if (drainer_.joinable()) drainer_.join();
}

void TraceRecording::stop() {
    if (finished_) return;
    finished_ = true;
    // The session stops first so that its last buffers (flushed by every CPU) reach the file.
    std::exception_ptr failed;
    if (session_running_) {
        session_running_ = false;
        try {
            guest_.stop_trace();
        } catch (...) {
            failed = std::current_exception();
        }
    }
    halt_drainer();
    if (drain_error_.empty()) recorder_->finish();
    else if (drain_error_code_ == collect::kExitCorrupt) recorder_->abandon();  // keep what was taken
    if (failed) std::rethrow_exception(failed);
    // The runner marks the repetition partial with this message as the reason.
    if (!drain_error_.empty()) throw collect::CollectError(drain_error_code_, "trace: " + drain_error_);
}

TraceRecording::~TraceRecording() {
    try {
        stop();
    } catch (...) {
        halt_drainer();  // the guest is gone or the file failed; the status says why elsewhere
    }
}

}  // namespace spinlab::run
