// collector/trace/trace_export_columns.cc: see trace_export_columns.h.
#include "trace_export_columns.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "hostlib/error.h"
#include "hostlib/json_writer.h"
#include "locktrace/buffer_parser.h"
#include "trace_export_fields.h"

namespace spinlab::collect {
namespace {

// The common columns of every row, as written (little endian, packed).
struct __attribute__((packed)) CommonColumns {
    uint64_t tsc;
    uint32_t cpu;
    uint32_t thread_id;
    uint32_t process_id;
    uint64_t index;
};
constexpr const char* kCommonNames[] = {"tsc", "cpu", "event_thread_id", "event_process_id", "index"};

// A payload field may not take a common column's name (a structured array's names are unique).
constexpr bool no_payload_field_is_common() {
    for (uint16_t t = 1; t <= kTraceEventTypeMax; t++)
        for (const PayloadField& f : payload_fields(t))
            for (const char* c : kCommonNames)
                if (std::string_view(f.name) == c) return false;
    return true;
}
static_assert(no_payload_field_is_common(), "a payload field named as a common column: rename the column");

// NumPy's type string of one element of a field: '<u8', '<i4', '|u1', '|S16'.
std::string npy_type(const PayloadField& f) {
    if (f.text) return "|S" + std::to_string(f.count);
    return std::string(f.width == 1 ? "|" : "<") + (f.is_signed ? "i" : "u") + std::to_string(f.width);
}

// The fixed part of an event of `type` (header included): what a row copies after the header.
uint32_t fixed_size(uint16_t type) { return trace_event_size(type); }

// A char array is text up to its first NUL (as the CTF export's UTF-8 arrays are read): what a
// guest left after the NUL is cleared, so that NumPy's bytes value (which drops trailing NULs
// only) is the text. `event` points where the event's header would start in the row.
void clear_after_text(uint16_t type, char* event) {
    for (const PayloadField& f : payload_fields(type)) {
        if (!f.text) continue;
        char* text = event + f.offset;
        const size_t n = strnlen(text, f.count);
        std::memset(text + n, 0, f.count - n);
    }
}

// One event type's rows as they are gathered.
struct Table {
    uint64_t rows = 0;
    std::string bytes;                 // the rows, packed
    std::vector<uint64_t> frames;      // stack types: every row's frames, in row order
};

void write_file(const std::filesystem::path& path, const std::string& head, const void* data, size_t n) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(head.data(), std::streamsize(head.size()));
    f.write(static_cast<const char*>(data), std::streamsize(n));
    f.close();
    if (!f) throw CollectError(kExitFailure, "cannot write " + path.string());
}

// Every event of the trace into its type's table, in file order.
std::vector<Table> gather(const LoadedTrace& t) {
    std::vector<Table> tables(kTraceEventTypeMax + 1);
    uint64_t index = 0;
    for (uint32_t cpu = 0; cpu < t.cpus.size(); cpu++) {
        for (const TraceBuffer& b : t.cpus[cpu]) {
            locktrace::BufferView v;
            locktrace::parse_buffer(b.bytes.data(), b.bytes.size(), &v);  // checked by load_trace
            locktrace::for_each_event(v, [&](const TraceEventHeader& h, const uint8_t* ev) {
                Table& table = tables[h.type];  // parse_buffer accepts known types only
                const CommonColumns c{h.tsc, cpu, h.thread_id, h.process_id, index++};
                const uint32_t fixed = fixed_size(h.type);
                table.bytes.append(reinterpret_cast<const char*>(&c), sizeof c);
                const size_t event_at = table.bytes.size() - sizeof(TraceEventHeader);  // fields' offsets count from there
                table.bytes.append(reinterpret_cast<const char*>(ev) + sizeof(TraceEventHeader),
                                   fixed - sizeof(TraceEventHeader));
                clear_after_text(h.type, table.bytes.data() + event_at);
                if (trace_event_has_frames(h.type)) {
                    const size_t n = (h.size - fixed) / sizeof(uint64_t);  // == nframes (parse_buffer)
                    const size_t at = table.frames.size();
                    table.frames.resize(at + n);
                    std::memcpy(table.frames.data() + at, ev + fixed, n * sizeof(uint64_t));
                }
                table.rows++;
            });
        }
    }
    return tables;
}

std::string meta_json(const LoadedTrace& t, const std::vector<Table>& tables) {
    JsonWriter j;
    j.begin_object()
        .field("format", kColumnsFormat)
        .field("version", kColumnsVersion)
        .field("tsc_hz", uint64_t(t.header.tsc_hz))
        .field("cpu_count", uint32_t(t.header.cpu_count))
        .field("trace_abi_version", uint32_t(t.header.abi_version))  // the file's, as read
        .field("events_discarded", events_discarded(t))
        .key("events")
        .begin_object();
    for (uint16_t type = 1; type <= kTraceEventTypeMax; type++)
        if (tables[type].rows) j.field(trace_event_type_name(type), tables[type].rows);
    j.end_object().end_object();
    return j.take() + "\n";
}

}  // namespace

std::vector<NpyColumn> columns_of(uint16_t type) {
    std::vector<NpyColumn> cols = {{kCommonNames[0], "<u8"},
                                   {kCommonNames[1], "<u4"},
                                   {kCommonNames[2], "<u4"},
                                   {kCommonNames[3], "<u4"},
                                   {kCommonNames[4], "<u8"}};
    for (const PayloadField& f : payload_fields(type))
        cols.push_back({f.name, npy_type(f), f.text ? 1 : f.count});
    return cols;
}

std::string npy_header(const std::vector<NpyColumn>& columns, uint64_t rows) {
    std::string descr = "[";
    for (size_t i = 0; i < columns.size(); i++) {
        const NpyColumn& c = columns[i];
        descr += (i ? ", ('" : "('") + c.name + "', '" + c.type + "'";
        if (c.count > 1) descr += ", (" + std::to_string(c.count) + ",)";
        descr += ")";
    }
    return npy_header(descr + "]", rows);
}

std::string npy_header(const std::string& descr, uint64_t rows) {
    std::string dict = "{'descr': " + descr + ", 'fortran_order': False, 'shape': (" + std::to_string(rows) + ",), }";
    constexpr size_t kPreamble = 10;  // magic (6), version (2), header length (2)
    const size_t used = kPreamble + dict.size() + 1;  // + the final '\n'
    dict.append((64 - used % 64) % 64, ' ');
    dict += '\n';
    if (dict.size() > UINT16_MAX)
        throw CollectError(kExitFailure, "a .npy header of " + std::to_string(dict.size()) +
                                             " bytes is over format 1.0's 65535");
    const uint16_t len = uint16_t(dict.size());
    std::string out("\x93NUMPY\x01\x00", 8);
    out += char(len & 0xff);
    out += char(len >> 8);
    return out + dict;
}

uint64_t events_discarded(const LoadedTrace& t) {
    uint64_t total = 0;
    for (const auto& bufs : t.cpus) {
        uint64_t newest = 0;  // a running counter: the largest is the newest
        for (const TraceBuffer& b : bufs) newest = std::max(newest, b.header.events_lost);
        total += newest;
    }
    return total;
}

void write_columns(const LoadedTrace& t, const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw CollectError(kExitFailure, "cannot create " + dir + ": " + ec.message());
    const std::vector<Table> tables = gather(t);
    for (uint16_t type = 1; type <= kTraceEventTypeMax; type++) {
        const Table& table = tables[type];
        const fs::path npy = fs::path(dir) / (std::string(trace_event_type_name(type)) + ".npy");
        const fs::path frames = fs::path(dir) / (std::string(trace_event_type_name(type)) + ".frames.npy");
        if (table.rows == 0) {  // nothing of this type: no file, not even an earlier export's
            fs::remove(npy, ec);
            fs::remove(frames, ec);
            continue;
        }
        write_file(npy, npy_header(columns_of(type), table.rows), table.bytes.data(), table.bytes.size());
        if (trace_event_has_frames(type))
            write_file(frames, npy_header("'<u8'", table.frames.size()), table.frames.data(),
                       table.frames.size() * sizeof(uint64_t));
    }
    const std::string meta = meta_json(t, tables);
    write_file(fs::path(dir) / "meta.json", {}, meta.data(), meta.size());
}

}  // namespace spinlab::collect
