// Writes the freeze record from a thread of its own, so the injector never blocks on file I/O:
// with the record on a disk file system, a write can wait for writeback or the journal for
// milliseconds, and every such wait made a freeze or thaw request late (up to 24 ms seen
// under load, though the injector runs SCHED_FIFO). The thread keeps the scheduling policy of
// its creator: construct it before raising the injector's priority.
#pragma once

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace spinlab::load {

class RecordWriter {
public:
    explicit RecordWriter(FILE* out);
    // Writes everything queued, then stops the thread.
    ~RecordWriter();
    RecordWriter(const RecordWriter&) = delete;
    RecordWriter& operator=(const RecordWriter&) = delete;

    // Queues text (whole rows); it is written and flushed soon after.
    void write(const std::string& text);

private:
    void run();
    FILE* out_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::string pending_;
    bool done_ = false;
    std::thread thread_;
};

}  // namespace spinlab::load
