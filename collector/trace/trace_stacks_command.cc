// collector/trace/trace_stacks_command.cc: `trace stacks FILE... -o DIR`: the call stacks of one or
// more trace files (the repetitions of a phase) summed into the files flame-graph tools and the
// report read, symbolized as `trace dump --stacks` does:
//
//   DIR/waits.folded    one line per distinct stack of contended spinlock events: the frames
//                       outermost first, ';'-separated, a space, the total wait in TSC cycles
//   DIR/profile.folded  the same for profile samples, weighted by sample count
//   DIR/sites.tsv       the top --top stacks of spinlock events by total wait: rank, events,
//                       contended, total wait, max wait, lock classes, then the frames innermost
//                       first, tab-separated (the report's table of lock call sites)
//
// An event whose stack was lost (its definition not in the trace) counts under the single frame
// "[stack lost]", so totals stay whole.
#include <spinlab/trace.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "commands.h"
#include "hostlib/error.h"
#include "locktrace/buffer_parser.h"
#include "locktrace/trace_file.h"
#include "symbolizer.h"
#include "trace_stack_dump.h"
#include "trace_text.h"

namespace spinlab::collect {
namespace {

namespace lt = locktrace;

struct Site {
    uint64_t events = 0, contended = 0, total_wait = 0, max_wait = 0;
    std::set<uint32_t> classes;
};

std::vector<uint8_t> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw CollectError(kExitFailure, "cannot read " + path);
    return {std::istreambuf_iterator<char>(in), {}};
}

// Calls f(header, event) for every event of every whole, checked buffer of a trace file.
template <class F>
void for_each_event_in(const std::string& path, const std::vector<uint8_t>& data, F f) {
    TraceFileHeader h;
    if (const lt::FileError fe = lt::parse_file_header(data.data(), data.size(), &h); fe != lt::FileError::kNone)
        throw CollectError(kExitFailure, path + ": " + trace_file_error_text(fe, data.data(), data.size()));
    size_t off = sizeof h;
    lt::FrameView fr;
    while (lt::next_frame(data.data(), data.size(), &off, &fr) == lt::FileError::kNone) {
        lt::BufferView v;
        if (fr.kind != TraceFrameKind::kBuffer || lt::parse_buffer(fr.payload, fr.length, &v) != lt::BufferError::kNone)
            continue;
        lt::for_each_event(v, f);
    }
}

std::string folded_frame(std::string name) {
    std::replace(name.begin(), name.end(), ';', ':');  // ';' separates frames
    return name;
}

// The stacks of the traces' spinlock and profile events, summed.
class StackTotals {
public:
    explicit StackTotals(Symbolizer& sym) : sym_(sym) {}

    void add_trace(const std::string& path, std::ostream& err) {
        const std::vector<uint8_t> data = read_file(path);
        StackDump d(sym_);  // keys are per session: one decoder per file
        for_each_event_in(path, data, [&](const TraceEventHeader& h, const uint8_t* ev) { d.learn(h, ev); });
        if (const std::string why = d.kernel_mismatch(); !why.empty())
            err << "spinlab-collect: warning: " << path << ": " << why << "\n";
        StackPairer pairer;
        for_each_event_in(path, data, [&](const TraceEventHeader& h, const uint8_t* ev) {
            const StackPairer::Owner* owner = nullptr;
            if (!pairer.pair(h, ev, &owner)) return;
            const auto r = d.decoder().resolve(h, ev);
            const uint16_t type = owner->header.type;
            if (type != uint16_t(TraceEventType::kSpinlock) && type != uint16_t(TraceEventType::kProfile)) return;
            stacks++;
            std::vector<std::string> names;  // innermost first
            if (r->kind == ResolvedStack::Kind::kLost) {
                lost++;
                names.push_back("[stack lost]");
            }
            for (size_t i = 0; i < r->frames.size(); i++)
                names.push_back(d.frame_name(r->frames[i], i > 0, owner->header.process_id));
            add_stack(*owner, names);
        });
    }

    // The spinlock call sites, the top `top` by total wait (then by events), as sites.tsv.
    std::string sites_tsv(size_t top) const {
        std::vector<std::pair<std::vector<std::string>, Site>> ranked(sites_.begin(), sites_.end());
        std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
            return a.second.total_wait != b.second.total_wait ? a.second.total_wait > b.second.total_wait
                                                               : a.second.events > b.second.events;
        });
        std::ostringstream o;
        o << "rank\tevents\tcontended\ttotal_wait\tmax_wait\tclasses\tframes (innermost first)\n";
        for (size_t i = 0; i < ranked.size() && i < top; i++) {
            const Site& s = ranked[i].second;
            o << i + 1 << "\t" << s.events << "\t" << s.contended << "\t" << s.total_wait << "\t" << s.max_wait
              << "\t";
            std::string sep;
            for (uint32_t k : s.classes) o << sep << k, sep = ",";
            for (const std::string& n : ranked[i].first) o << "\t" << n;
            o << "\n";
        }
        return o.str();
    }

    std::map<std::string, uint64_t> waits, samples;  // folded line -> weight
    uint64_t stacks = 0, lost = 0;

private:
    // One event's stack, `names` innermost first: a folded line of its table, and for a
    // spinlock event its call site's totals.
    void add_stack(const StackPairer::Owner& owner, const std::vector<std::string>& names) {
        std::string line;
        for (size_t i = names.size(); i-- > 0;) line += (line.empty() ? "" : ";") + folded_frame(names[i]);
        if (owner.header.type == uint16_t(TraceEventType::kProfile)) {
            samples[line]++;
            return;
        }
        TraceSpinlockEvent e;
        std::memcpy(&e, owner.bytes.data(), sizeof e);
        const bool contended = e.flags & kTraceSpinContended;
        const uint64_t wait = contended ? e.wait_cycles : 0;
        if (contended) waits[line] += wait;
        Site& s = sites_[names];
        s.events++;
        s.contended += contended;
        s.total_wait += wait;
        s.max_wait = std::max(s.max_wait, wait);
        s.classes.insert(e.class_id);
    }

    Symbolizer& sym_;
    std::map<std::vector<std::string>, Site> sites_;  // frames innermost first -> totals
};

// A folded table: one "line weight" line per stack.
std::string folded(const std::map<std::string, uint64_t>& table) {
    std::ostringstream o;
    for (const auto& [line, w] : table) o << line << " " << w << "\n";
    return o.str();
}

}  // namespace

int run_trace_stacks(const Config& c, std::ostream& out, std::ostream& err) {
    Symbolizer sym;
    if (!c.trace.kernel_elf.empty()) sym.load_kernel(c.trace.kernel_elf);
    if (!c.trace.initrd.empty()) sym.load_initrd(c.trace.initrd);
    StackTotals totals(sym);
    for (const std::string& path : c.trace.files) totals.add_trace(path, err);
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(c.output, ec);
    if (ec) throw CollectError(kExitFailure, "cannot create " + c.output + ": " + ec.message());
    auto write = [&](const std::string& name, const std::string& text) {
        const std::string p = (fs::path(c.output) / name).string();
        std::ofstream f(p, std::ios::trunc);
        f << text;
        f.close();
        if (!f) throw CollectError(kExitFailure, "cannot write " + p);
    };
    write("waits.folded", folded(totals.waits));
    write("profile.folded", folded(totals.samples));
    write("sites.tsv", totals.sites_tsv(c.trace.top));
    out << "trace stacks: " << c.trace.files.size() << " trace(s), " << totals.stacks << " event stacks ("
        << totals.lost << " lost), " << totals.waits.size() << " distinct wait stacks, " << totals.samples.size()
        << " distinct profile stacks -> " << c.output << "\n";
    return 0;
}

}  // namespace spinlab::collect
