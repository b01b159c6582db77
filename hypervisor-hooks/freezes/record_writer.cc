#include "record_writer.h"

namespace spinlab::load {

RecordWriter::RecordWriter(FILE* out) : out_(out), thread_([this] { run(); }) {}

RecordWriter::~RecordWriter() {
    {
        std::lock_guard lock(mutex_);
        done_ = true;
    }
    wake_.notify_one();
    thread_.join();
}

void RecordWriter::write(const std::string& text) {
    {
        std::lock_guard lock(mutex_);
        pending_ += text;
    }
    wake_.notify_one();
}

void RecordWriter::run() {
    std::string batch;
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return done_ || !pending_.empty(); });
            if (pending_.empty() && done_) return;
            batch.swap(pending_);
        }
        std::fwrite(batch.data(), 1, batch.size(), out_);
        std::fflush(out_);
        batch.clear();
    }
}

}  // namespace spinlab::load
