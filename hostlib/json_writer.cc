// hostlib/json_writer.cc: see json_writer.h.
#include "json_writer.h"

#include <cmath>
#include <cstdio>

namespace spinlab::collect {

JsonWriter& JsonWriter::value(double v) {
    if (!std::isfinite(v)) return raw("null");  // JSON has no NaN or infinity
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return raw(buf);
}

JsonWriter& JsonWriter::fixed(double v, int decimals) {
    if (!std::isfinite(v)) return raw("null");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return raw(buf);
}

void JsonWriter::string_literal(std::string_view s) {
    out_ += '"';
    for (char ch : s) {
        auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"': out_ += "\\\""; break;
            case '\\': out_ += "\\\\"; break;
            case '\n': out_ += "\\n"; break;
            case '\t': out_ += "\\t"; break;
            case '\r': out_ += "\\r"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out_ += buf;
                } else {
                    out_ += ch;
                }
        }
    }
    out_ += '"';
}

}  // namespace spinlab::collect
