// hostlib/json_writer.h: a minimal streaming JSON writer for the collector's output and its
// record files, the runner's results files and spinlab-load's reports (no dependency for ~60
// lines). Keys and strings are escaped; numbers are integers or finite doubles. Commas are placed
// by the writer, so callers cannot forget them.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace spinlab::collect {

class JsonWriter {
public:
    JsonWriter& begin_object() { return open('{'); }
    JsonWriter& end_object() { return close('}'); }
    JsonWriter& begin_array() { return open('['); }
    JsonWriter& end_array() { return close(']'); }
    JsonWriter& key(std::string_view k) {
        comma();
        string_literal(k);
        out_ += ':';
        after_key_ = true;
        return *this;
    }
    JsonWriter& value(std::string_view s) {
        comma();
        string_literal(s);
        return *this;
    }
    JsonWriter& value(const char* s) { return value(std::string_view(s)); }
    JsonWriter& value(uint64_t v) { return raw(std::to_string(v)); }
    JsonWriter& value(int64_t v) { return raw(std::to_string(v)); }
    JsonWriter& value(uint32_t v) { return raw(std::to_string(v)); }
    JsonWriter& value(int v) { return raw(std::to_string(v)); }
    JsonWriter& value(bool v) { return raw(v ? "true" : "false"); }
    JsonWriter& value(double v);
    // A measurement at its resolution: `decimals` digits after the point (0.0800, not
    // 0.080000000000000002). Not finite: null, as value(double).
    JsonWriter& fixed(double v, int decimals);
    template <class T>
    JsonWriter& field(std::string_view k, T v) {
        key(k);
        return value(v);
    }
    const std::string& str() const { return out_; }
    std::string take() { return std::move(out_); }

private:
    JsonWriter& open(char c) {
        comma();
        out_ += c;
        first_.push_back(true);
        return *this;
    }
    JsonWriter& close(char c) {
        out_ += c;
        first_.pop_back();
        return *this;
    }
    JsonWriter& raw(const std::string& s) {
        comma();
        out_ += s;
        return *this;
    }
    void comma() {
        if (after_key_) {
            after_key_ = false;
            return;
        }
        if (!first_.empty()) {
            if (!first_.back()) out_ += ',';
            first_.back() = false;
        }
    }
    void string_literal(std::string_view s);

    std::string out_;
    std::vector<bool> first_;
    bool after_key_ = false;
};

}  // namespace spinlab::collect
