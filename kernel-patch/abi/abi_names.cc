// abi_names.cc: spinlab-abi-names-writer OUT.json writes the names of every ABI enum that has a
// name table (spinlab/enum_names.h) as JSON. The build runs it (target spinlab-abi-names, see
// names.cmake) into build/host/abi_names.json, which analysis/spinlab_report/names.py reads, so
// that Python spells no name again.
//
// Output: {"generated_by": ..., "enums": {"lhp_class": [{"value": 0, "id": "kNeither",
// "name": "neither"}, ...], ...}, "constants": {"long_wait_threshold": 1048576}}, each enum's rows
// in value order; constants are the ABI's defaults that Python uses too. Names are plain ASCII
// words (the tables are checked for that here: a quote or backslash would need escaping).
#include <spinlab/perfdata.h>
#include <spinlab/shm.h>
#include <spinlab/preemptor.h>
#include <spinlab/sysinfo.h>
#include <spinlab/trace.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

FILE* out = nullptr;

bool plain(const char* s) {
    for (; *s; ++s)
        if (*s == '"' || *s == '\\' || static_cast<unsigned char>(*s) < 0x20) return false;
    return true;
}

template <size_t N>
bool write_enum(const char* key, const spinlab::EnumName (&table)[N], bool last) {
    std::fprintf(out, "    \"%s\": [\n", key);
    for (size_t i = 0; i < N; ++i) {
        if (!plain(table[i].id) || !plain(table[i].name)) {
            std::fprintf(stderr, "spinlab-abi-names: %s row %zu: a name with a quote, backslash or control character\n", key, i);
            return false;
        }
        std::fprintf(out, "      {\"value\": %u, \"id\": \"%s\", \"name\": \"%s\"}%s\n", table[i].value,
                    table[i].id, table[i].name, i + 1 < N ? "," : "");
    }
    std::fprintf(out, "    ]%s\n", last ? "" : ",");
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace spinlab;
    if (argc != 2) {
        std::fprintf(stderr, "usage: spinlab-abi-names-writer OUT.json\n");
        return 2;
    }
    const std::string tmp = std::string(argv[1]) + ".tmp";
    out = std::fopen(tmp.c_str(), "w");
    if (!out) {
        std::fprintf(stderr, "spinlab-abi-names-writer: cannot write %s: %s\n", tmp.c_str(), std::strerror(errno));
        return 1;
    }
    std::fprintf(out, "{\n  \"generated_by\": \"spinlab-abi-names from kernel-patch/abi/spinlab/*.h: do not edit\",\n"
                "  \"enums\": {\n");
    const bool ok = write_enum("lhp_class", kLhpClassNames, false) &&
                    write_enum("lock_algorithm", kLockAlgorithmNames, false) &&
                    write_enum("clock_source", kClockSourceNames, false) &&
                    write_enum("instrument_level", kInstrumentLevelNames, false) &&
                    write_enum("trace_logger_mode", kTraceLoggerModeNames, false) &&
                    write_enum("trace_state", kTraceStateNames, false) &&
                    write_enum("trace_stack_end", kTraceStackEndNames, false) &&
                    write_enum("acquisitions_counted", kAcquisitionsCountedNames, false) &&
                    write_enum("clock_reference", kClockReferenceNames, false) &&
                    write_enum("preemptor_class", kPreemptorClassNames, true);
    std::fprintf(out, "  },\n  \"constants\": {\n    \"long_wait_threshold\": %llu\n  }\n}\n",
                 static_cast<unsigned long long>(kDefaultLongWaitThreshold));
    // Written whole or not at all: a reader never sees half a file.
    if (std::fclose(out) != 0 || !ok || std::rename(tmp.c_str(), argv[1]) != 0) {
        std::fprintf(stderr, "spinlab-abi-names-writer: %s not written\n", argv[1]);
        std::remove(tmp.c_str());
        return 1;
    }
    return 0;
}
