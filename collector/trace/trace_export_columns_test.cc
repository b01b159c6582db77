// collector/trace/trace_export_columns_test.cc: `trace export --format columns` on a trace file
// made here, buffer by buffer, with known events: each .npy is read back by a small reader of
// the format (magic, version, header dict, 64-byte data offset), independent of the writer, and
// the values of its columns, its row count and meta.json's counts are checked; a damaged buffer
// is left out, the rest exported, and the export says it was damaged.
#include "trace/trace_export_columns.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>
#ifndef BOOST_BIND_GLOBAL_PLACEHOLDERS  // property_tree includes the old boost/bind.hpp
#define BOOST_BIND_GLOBAL_PLACEHOLDERS
#endif
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include "hostlib/error.h"
#include "locktrace/trace_file.h"
#include "trace/trace_export.h"

namespace spinlab::collect {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

template <class E>
Bytes event_bytes(const E& e) {
    const auto* p = reinterpret_cast<const uint8_t*>(&e);
    return Bytes(p, p + sizeof e);
}

TraceEventHeader header(TraceEventType type, uint32_t size, uint16_t cpu, uint32_t tid, uint32_t pid,
                        uint64_t tsc) {
    return {uint16_t(size), uint16_t(type), cpu, 0, tid, pid, tsc};
}

Bytes spinlock(uint16_t cpu, uint64_t tsc, uint64_t wait, uint32_t class_id) {
    TraceSpinlockEvent e{};
    e.h = header(TraceEventType::kSpinlock, sizeof e, cpu, 40 + cpu, 4, tsc);
    e.lock_address = 0xffff800000001000 + cpu;
    e.call_site = 0xffff800000200000;
    e.acquire_tsc = tsc - wait - 10;
    e.release_tsc = tsc;
    e.wait_cycles = wait;
    e.spin_count = wait / 10;
    e.holder_steal_ns = 7;
    e.class_id = class_id;
    e.holder_cpu_start = 1 - cpu;
    e.lhp_class = 2;
    e.flags = kTraceSpinContended;
    return event_bytes(e);
}

Bytes thread_start(uint16_t cpu, uint64_t tsc, uint32_t tid, const char* name) {
    TraceThreadEvent e{};
    e.h = header(TraceEventType::kThreadStart, sizeof e, cpu, 1, 1, tsc);
    e.thread_id = tid;
    e.process_id = 9;
    e.affinity_cpu = 1;
    std::memset(e.name, 'J', sizeof e.name);  // junk after the NUL, as a guest may leave
    std::memcpy(e.name, name, std::strlen(name) + 1);
    return event_bytes(e);
}

Bytes syscall_enter(uint16_t cpu, uint64_t tsc, uint64_t number, uint64_t a0, uint64_t a1, uint64_t a2) {
    TraceSyscallEnterEvent e{};
    e.h = header(TraceEventType::kSyscallEnter, sizeof e, cpu, 40 + cpu, 4, tsc);
    e.number = number;
    e.args[0] = a0, e.args[1] = a1, e.args[2] = a2;
    return event_bytes(e);
}

Bytes stack_definition(uint16_t cpu, uint64_t tsc, uint64_t key, const std::vector<uint64_t>& frames) {
    TraceStackEvent e{};
    e.h = header(TraceEventType::kStackDefinition, uint32_t(sizeof e + 8 * frames.size()), cpu, 40 + cpu, 4, tsc);
    e.key = key;
    e.depth = e.nframes = uint16_t(frames.size());
    Bytes b = event_bytes(e);
    const auto* f = reinterpret_cast<const uint8_t*>(frames.data());
    b.insert(b.end(), f, f + 8 * frames.size());
    return b;
}

// One published buffer: its header (filled from the events) and the events.
Bytes buffer(uint32_t cpu, uint64_t sequence, uint64_t events_lost, const std::vector<Bytes>& events) {
    TraceBufferHeader h{};
    h.sequence = sequence;
    h.session_id = 7;
    h.cpu = cpu;
    h.event_count = uint32_t(events.size());
    h.bytes_used = sizeof h;
    for (const Bytes& e : events) {
        TraceEventHeader eh;
        std::memcpy(&eh, e.data(), sizeof eh);
        if (h.first_tsc == 0) h.first_tsc = eh.tsc;
        h.last_tsc = eh.tsc;
        h.bytes_used += uint32_t(e.size());
    }
    h.events_lost = events_lost;
    Bytes b(reinterpret_cast<const uint8_t*>(&h), reinterpret_cast<const uint8_t*>(&h) + sizeof h);
    for (const Bytes& e : events) b.insert(b.end(), e.begin(), e.end());
    return b;
}

// A trace file of these buffers, as `trace record` frames them.
Bytes trace_file(uint32_t cpus, const std::vector<Bytes>& buffers) {
    TraceSessionInformation s{};
    s.session_id = 7;
    s.start_tsc = 1000;
    const TraceFileHeader fh = locktrace::make_file_header(s, cpus, 2'000'000'000);
    Bytes out(reinterpret_cast<const uint8_t*>(&fh), reinterpret_cast<const uint8_t*>(&fh) + sizeof fh);
    for (const Bytes& b : buffers) {
        const TraceFrameHeader f = locktrace::make_frame_header(TraceFrameKind::kBuffer, b.data(), uint32_t(b.size()));
        out.insert(out.end(), reinterpret_cast<const uint8_t*>(&f), reinterpret_cast<const uint8_t*>(&f) + sizeof f);
        out.insert(out.end(), b.begin(), b.end());
    }
    return out;
}

// ---- a reader of .npy format 1.0, written from numpy's format documentation -----------------

struct Column {
    std::string name;
    std::string type;  // '<u8', '|S16'
    uint32_t count = 1;
    size_t offset = 0;
    size_t size = 0;  // bytes of the whole column in a row
};

struct Npy {
    std::string descr;  // as written
    std::vector<Column> columns;
    uint64_t rows = 0;
    size_t data_offset = 0;
    size_t row_size = 0;
    Bytes data;

    const Column& column(const std::string& name) const {
        for (const Column& c : columns)
            if (c.name == name) return c;
        throw std::runtime_error("no column " + name);
    }
    // Element i of a column of row r, as an unsigned integer of the column's width.
    uint64_t u(uint64_t r, const std::string& name, uint32_t i = 0) const {
        const Column& c = column(name);
        const size_t w = c.size / c.count;
        uint64_t v = 0;
        std::memcpy(&v, data.data() + r * row_size + c.offset + i * w, w);
        return v;
    }
    std::string text(uint64_t r, const std::string& name) const {
        const Column& c = column(name);
        const char* p = reinterpret_cast<const char*>(data.data() + r * row_size + c.offset);
        return std::string(p, strnlen(p, c.size));
    }
};

size_t element_size(const std::string& type) { return std::stoul(type.substr(2)); }

Npy read_npy(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    const Bytes f((std::istreambuf_iterator<char>(in)), {});
    if (f.size() < 10 || std::memcmp(f.data(), "\x93NUMPY", 6) != 0) throw std::runtime_error("no magic");
    if (f[6] != 1 || f[7] != 0) throw std::runtime_error("not version 1.0");
    const size_t len = f[8] | (size_t(f[9]) << 8);
    Npy n;
    n.data_offset = 10 + len;
    if (f.size() < n.data_offset) throw std::runtime_error("header cut short");
    const std::string dict(f.begin() + 10, f.begin() + long(n.data_offset));
    if (dict.back() != '\n') throw std::runtime_error("header does not end in a newline");
    std::smatch m;
    static const std::regex whole(R"(^\{'descr': (.*), 'fortran_order': False, 'shape': \((\d+),\), \} *\n$)");
    if (!std::regex_match(dict, m, whole)) throw std::runtime_error("header: " + dict);
    n.descr = m[1];
    n.rows = std::stoull(m[2]);
    static const std::regex field(R"(\('([a-z_0-9]+)', '([<|][uiS]\d+)'(, \((\d+),\))?\))");
    for (auto it = std::sregex_iterator(n.descr.begin(), n.descr.end(), field); it != std::sregex_iterator(); ++it) {
        Column c{(*it)[1], (*it)[2], (*it)[4].matched ? uint32_t(std::stoul((*it)[4])) : 1u};
        c.offset = n.row_size;
        c.size = element_size(c.type) * c.count;
        n.row_size += c.size;
        n.columns.push_back(c);
    }
    if (n.columns.empty() && n.descr == "'<u8'") n.row_size = 8;  // a plain array
    n.data.assign(f.begin() + long(n.data_offset), f.end());
    return n;
}

// ---- the tests -----------------------------------------------------------------------------

class ColumnsExport : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/spinlab-columns-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { fs::remove_all(dir_); }

    // Writes the file, exports it; the export's result and stderr.
    TraceExportResult export_file(const Bytes& file) {
        const fs::path trace = dir_ / "run.trace";
        std::ofstream(trace, std::ios::binary).write(reinterpret_cast<const char*>(file.data()), long(file.size()));
        std::ostringstream err;
        const TraceExportResult r = export_trace(trace.string(), TraceExportFormat::kColumns, out().string(),
                                                 nullptr, nullptr, err);
        err_ = err.str();
        return r;
    }
    fs::path out() const { return dir_ / "cols"; }
    boost::property_tree::ptree meta() const {
        boost::property_tree::ptree p;
        boost::property_tree::read_json((out() / "meta.json").string(), p);
        return p;
    }

    fs::path dir_;
    std::string err_;
};

// CPU 0: two buffers (EventsLost 3, then 5: a running counter); CPU 1: one (EventsLost 2).
std::vector<Bytes> two_cpus() {
    return {
        buffer(0, 0, 3, {thread_start(0, 1100, 77, "worker-a"), spinlock(0, 2000, 400, 3),
                         syscall_enter(0, 2100, 12, 1, 2, 0xffffffffffffffff)}),
        buffer(1, 0, 2, {spinlock(1, 1500, 90, 5), stack_definition(1, 1500, 0xabc, {0x1000, 0x2000, 0x3000})}),
        buffer(0, 1, 5, {spinlock(0, 3000, 800, 3), stack_definition(0, 3000, 0xdef, {0x4000})}),
    };
}

TEST_F(ColumnsExport, EveryEventIsARowOfItsTypeWithTheCommonColumnsAndTheAbiFields) {
    fs::create_directories(out());
    std::ofstream(out() / "profile.npy") << "an earlier export's";
    const TraceExportResult r = export_file(trace_file(2, two_cpus()));
    EXPECT_FALSE(r.damaged) << err_;
    EXPECT_EQ(r.buffers, 3u);
    EXPECT_FALSE(fs::exists(out() / "profile.npy")) << "a type without events has no file";

    const Npy s = read_npy(out() / "spinlock.npy");
    EXPECT_EQ(s.data_offset % 64, 0u);
    EXPECT_EQ(s.descr,
              "[('tsc', '<u8'), ('cpu', '<u4'), ('event_thread_id', '<u4'), ('event_process_id', '<u4'), "
              "('index', '<u8'), ('lock_address', '<u8'), ('call_site', '<u8'), ('acquire_tsc', '<u8'), "
              "('release_tsc', '<u8'), ('wait_cycles', '<u8'), ('spin_count', '<u8'), "
              "('holder_steal_ns', '<u8'), ('waiter_steal_ns', '<u8'), ('class_id', '<u4'), "
              "('holder_cpu_start', '<u4'), ('holder_cpu_end', '<u4'), ('lhp_class', '|u1'), "
              "('rules', '|u1'), ('flags', '|u1'), ('handovers', '|u1')]");
    EXPECT_EQ(s.row_size, 28 + sizeof(TraceSpinlockEvent) - sizeof(TraceEventHeader)) << "packed";
    ASSERT_EQ(s.rows, 3u);
    ASSERT_EQ(s.data.size(), s.rows * s.row_size);
    // File order: CPU 0's buffers by sequence, then CPU 1's.
    EXPECT_EQ(s.u(0, "tsc"), 2000u);
    EXPECT_EQ(s.u(1, "tsc"), 3000u);
    EXPECT_EQ(s.u(2, "tsc"), 1500u);
    EXPECT_EQ(s.u(2, "cpu"), 1u);
    EXPECT_EQ(s.u(2, "event_thread_id"), 41u);
    EXPECT_EQ(s.u(2, "event_process_id"), 4u);
    EXPECT_EQ(s.u(0, "index"), 1u);
    EXPECT_EQ(s.u(1, "index"), 3u);
    EXPECT_EQ(s.u(2, "index"), 5u);
    EXPECT_EQ(s.u(1, "lock_address"), 0xffff800000001000u);
    EXPECT_EQ(s.u(1, "acquire_tsc"), 3000u - 800 - 10);
    EXPECT_EQ(s.u(1, "release_tsc"), 3000u);
    EXPECT_EQ(s.u(1, "wait_cycles"), 800u);
    EXPECT_EQ(s.u(1, "spin_count"), 80u);
    EXPECT_EQ(s.u(1, "holder_steal_ns"), 7u);
    EXPECT_EQ(s.u(1, "class_id"), 3u);
    EXPECT_EQ(s.u(2, "class_id"), 5u);
    EXPECT_EQ(s.u(1, "holder_cpu_start"), 1u);
    EXPECT_EQ(s.u(1, "lhp_class"), 2u);
    EXPECT_EQ(s.u(1, "flags"), kTraceSpinContended);

    const auto m = meta();
    EXPECT_EQ(m.get<std::string>("format"), "spinlab-trace-columns");
    EXPECT_EQ(m.get<int>("version"), 1);
    EXPECT_EQ(m.get<uint64_t>("tsc_hz"), 2'000'000'000u);
    EXPECT_EQ(m.get<uint32_t>("cpu_count"), 2u);
    EXPECT_EQ(m.get<uint32_t>("trace_abi_version"), kTraceAbiVersion) << "the file's version, as read";
    EXPECT_EQ(m.get<uint64_t>("events_discarded"), 5u + 2) << "the newest counter of each CPU, summed";
    std::map<std::string, uint64_t> counts;
    for (const auto& [name, n] : m.get_child("events")) counts[name] = n.get_value<uint64_t>();
    EXPECT_EQ(counts, (std::map<std::string, uint64_t>{
                          {"spinlock", 3}, {"thread-start", 1}, {"syscall-enter", 1}, {"stack-def", 2}}));
}

TEST_F(ColumnsExport, TextArraysAndStackFramesKeepTheirShape) {
    export_file(trace_file(2, two_cpus()));
    const Npy t = read_npy(out() / "thread-start.npy");
    ASSERT_EQ(t.rows, 1u);
    EXPECT_EQ(t.column("name").type, "|S" + std::to_string(kTraceNameLen));
    EXPECT_EQ(t.text(0, "name"), "worker-a");
    const Column& name = t.column("name");
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(t.data.data()) + name.offset, name.size),
              std::string("worker-a") + std::string(name.size - 8, '\0'))
        << "what follows the text's NUL is cleared";
    EXPECT_EQ(t.u(0, "thread_id"), 77u) << "the payload's own thread_id, beside event_thread_id";
    EXPECT_EQ(t.u(0, "event_thread_id"), 1u);
    EXPECT_EQ(t.u(0, "process_id"), 9u);

    const Npy c = read_npy(out() / "syscall-enter.npy");
    ASSERT_EQ(c.rows, 1u);
    EXPECT_EQ(c.column("args").count, 3u);
    EXPECT_EQ(c.u(0, "number"), 12u);
    EXPECT_EQ(c.u(0, "args", 0), 1u);
    EXPECT_EQ(c.u(0, "args", 1), 2u);
    EXPECT_EQ(c.u(0, "args", 2), 0xffffffffffffffffu);

    const Npy k = read_npy(out() / "stack-def.npy");
    ASSERT_EQ(k.rows, 2u);
    EXPECT_EQ(k.u(0, "nframes"), 1u);  // CPU 0's first
    EXPECT_EQ(k.u(1, "nframes"), 3u);
    EXPECT_EQ(k.u(1, "key"), 0xabcu);
    const Npy f = read_npy(out() / "stack-def.frames.npy");
    EXPECT_EQ(f.descr, "'<u8'");
    ASSERT_EQ(f.rows, 4u);
    ASSERT_EQ(f.data.size(), 4u * 8);
    std::vector<uint64_t> frames(4);
    std::memcpy(frames.data(), f.data.data(), 32);
    EXPECT_EQ(frames, (std::vector<uint64_t>{0x4000, 0x1000, 0x2000, 0x3000}));
}

TEST_F(ColumnsExport, ADamagedBufferIsLeftOutAndTheRestExported) {
    std::vector<Bytes> buffers = two_cpus();
    TraceBufferHeader h;  // CPU 1's buffer (the middle frame) says 9 events: it fails its check
    std::memcpy(&h, buffers[1].data(), sizeof h);
    h.event_count = 9;
    std::memcpy(buffers[1].data(), &h, sizeof h);
    const TraceExportResult r = export_file(trace_file(2, buffers));
    EXPECT_TRUE(r.damaged);
    EXPECT_NE(err_.find("event count differs"), std::string::npos) << err_;
    const Npy s = read_npy(out() / "spinlock.npy");
    ASSERT_EQ(s.rows, 2u);
    EXPECT_EQ(s.u(0, "tsc"), 2000u);
    EXPECT_EQ(s.u(1, "tsc"), 3000u);
    EXPECT_EQ(meta().get<uint64_t>("events_discarded"), 5u) << "CPU 1's only buffer is gone";
    EXPECT_EQ(meta().get<uint64_t>("events.stack-def"), 1u);
}

TEST_F(ColumnsExport, ATruncatedFileExportsItsWholeBuffers) {
    Bytes file = trace_file(2, two_cpus());
    file.resize(file.size() - 20);
    EXPECT_TRUE(export_file(file).damaged);
    EXPECT_NE(err_.find("cut short"), std::string::npos) << err_;
    EXPECT_EQ(read_npy(out() / "spinlock.npy").rows, 2u);
}

TEST_F(ColumnsExport, AFileThatIsNoTraceIsAnError) {
    Bytes file(200, 'x');
    EXPECT_THROW(export_file(file), CollectError);
    EXPECT_FALSE(fs::exists(out() / "meta.json"));
}

TEST(NpyHeader, PadsTheDictSoThatTheDataStartsAtAMultipleOf64) {
    for (uint64_t rows : {0ull, 9ull, 123456789ull}) {
        const std::string h = npy_header("'<u8'", rows);
        EXPECT_EQ(h.size() % 64, 0u);
        EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
        EXPECT_EQ(size_t(uint8_t(h[8]) | uint8_t(h[9]) << 8), h.size() - 10);
        EXPECT_EQ(h.back(), '\n');
        EXPECT_NE(h.find("'shape': (" + std::to_string(rows) + ",), }"), std::string::npos);
    }
}

}  // namespace
}  // namespace spinlab::collect
