// hostlib/results_contract_json.cc: spinlab-results-contract-writer OUT.json writes the results
// directory's names (results_contract.h) for the Python analysis. The build runs it (target
// spinlab-results-contract) into build/host/results_contract.json, which
// analysis/spinlab_report/contract.py reads, so that Python spells no key, column or state again.
//
// Output: {"generated_by": ..., "keys": {"acquisitions": "acquisitions", ...},
// "objects": {"meta": ["format", "run_id", ...], ...},
// "enums": {"timeline_state": [{"value": 0, "id": "kOn", "name": "on"}, ...], "run_state": [...],
// "halt_kind": [{"value": 0, "id": "kHalted", "name": "halted"}, ...]}}:
// each object's keys in the order its writer writes them; the enums in abi_names.json's shape.
// Written whole or not at all.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "hostlib/json_writer.h"
#include "hostlib/results_contract.h"

namespace {

using spinlab::collect::JsonWriter;

template <size_t N>
void write_enum(JsonWriter& w, const char* key, const spinlab::EnumName (&table)[N]) {
    w.key(key).begin_array();
    for (const spinlab::EnumName& e : table)
        w.begin_object().field("value", e.value).field("id", e.id).field("name", e.name).end_object();
    w.end_array();
}

std::string contract_json() {
    namespace key = spinlab::results::key;
    JsonWriter w;
    w.begin_object().field("generated_by", "spinlab-results-contract-writer from hostlib/results_contract.h: do not edit");
    // Every key under its C++ identifier (its spelling but for a C++ keyword), for the Python's
    // attribute names.
    w.key("keys").begin_object();
#define K(ident, spelling) w.field(#ident, spelling);
    SPINLAB_RESULTS_KEYS(K)
#undef K
    w.end_object();
    w.key("objects").begin_object();
#define X(ident) w.value(key::ident);
#define O(object, KEYS)               \
    w.key(#object).begin_array();     \
    KEYS                              \
    w.end_array();
    SPINLAB_RESULTS_OBJECTS(O)
#undef O
#undef X
    w.end_object();
    w.key("enums").begin_object();
    write_enum(w, "timeline_state", spinlab::results::kRunStateNames);
    write_enum(w, "run_state", spinlab::results::kRunCompletionNames);
    write_enum(w, "halt_kind", spinlab::results::kHaltKindNames);
    w.end_object();
    w.end_object();
    return w.take() + "\n";
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: spinlab-results-contract-writer OUT.json\n");
        return 2;
    }
    const std::string tmp = std::string(argv[1]) + ".tmp";
    FILE* out = std::fopen(tmp.c_str(), "w");
    if (!out) {
        std::fprintf(stderr, "spinlab-results-contract-writer: cannot write %s: %s\n", tmp.c_str(), std::strerror(errno));
        return 1;
    }
    const std::string text = contract_json();
    const bool ok = std::fwrite(text.data(), 1, text.size(), out) == text.size();
    if (std::fclose(out) != 0 || !ok || std::rename(tmp.c_str(), argv[1]) != 0) {
        std::fprintf(stderr, "spinlab-results-contract-writer: %s not written\n", argv[1]);
        std::remove(tmp.c_str());
        return 1;
    }
    return 0;
}
