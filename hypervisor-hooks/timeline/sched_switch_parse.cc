#include "sched_switch_parse.h"

#include <charconv>

#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load {

namespace {
template <typename T>
bool parse_number(std::string_view s, T& out) {
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
}

// The value of " key=" found at or after `from`, up to the next space (or end).
std::optional<std::string_view> field_after(std::string_view text, std::string_view key,
                                            size_t from) {
    size_t pos = text.find(key, from);
    if (pos == std::string_view::npos) return std::nullopt;
    size_t start = pos + key.size();
    size_t end = text.find(' ', start);
    return text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

// "1073392736050" -> ticks; "1234.567890" -> ns.
bool parse_timestamp(std::string_view s, uint64_t& out) {
    size_t dot = s.find('.');
    if (dot == std::string_view::npos) return parse_number(s, out);
    uint64_t sec = 0;
    std::string_view frac = s.substr(dot + 1);
    if (!parse_number(s.substr(0, dot), sec) || frac.empty() || frac.size() > 9) return false;
    uint64_t f = 0;
    if (!parse_number(frac, f)) return false;
    for (size_t i = frac.size(); i < 9; ++i) f *= 10;
    out = sec * 1000000000ull + f;
    return true;
}
}  // namespace

void check_sched_switch_format(const std::string& format) {
    for (const char* field : {" prev_pid;", " prev_state;", " next_pid;"}) {
        if (format.find(field) == std::string::npos)
            throw LoadError(std::string("this kernel's sched_switch has no field") + field +
                            " (events/sched/sched_switch/format); the timeline cannot read it");
    }
    const size_t print = format.find("print fmt:");
    if (print == std::string::npos) throw LoadError("this kernel's sched_switch format has no 'print fmt:' line");
    for (const char* text : {"prev_pid=%d", "prev_state=%s", " ==> ", "next_pid=%d"}) {
        if (format.find(text, print) == std::string::npos)
            throw LoadError(std::string("this kernel's sched_switch prints no '") + text +
                            "' (events/sched/sched_switch/format); the timeline cannot parse its lines");
    }
}

std::optional<SchedSwitch> parse_sched_switch_line(std::string_view line) {
    const std::string_view kMarker = ": sched_switch: ";
    size_t marker = line.find(kMarker);
    if (marker == std::string_view::npos) return std::nullopt;
    auto bad = [&](const std::string& why) {
        return LoadError("sched_switch line '" + std::string(line) + "': " + why);
    };
    SchedSwitch ev;
    // Header: "<comm>-<pid> [cpu] flags timestamp" — the timestamp is the last token.
    std::string_view head = line.substr(0, marker);
    size_t ts_start = head.rfind(' ');
    if (ts_start == std::string_view::npos || !parse_timestamp(head.substr(ts_start + 1), ev.ts)) {
        throw bad("no timestamp before 'sched_switch:'");
    }
    size_t cpu_close = head.rfind(']', ts_start);
    size_t cpu_open = cpu_close == std::string_view::npos ? cpu_close : head.rfind('[', cpu_close);
    if (cpu_open == std::string_view::npos ||
        !parse_number(head.substr(cpu_open + 1, cpu_close - cpu_open - 1), ev.cpu)) {
        throw bad("no [cpu] field");
    }
    std::string_view body = line.substr(marker + kMarker.size());
    // " ==> " splits prev and next; take the last one so a comm containing it cannot fool us.
    size_t arrow = body.rfind(" ==> ");
    if (arrow == std::string_view::npos) throw bad("no '==>'");
    std::string_view prev = body.substr(0, arrow);
    std::string_view next = body.substr(arrow);
    size_t prev_pid_at = prev.rfind(" prev_pid=");
    auto prev_pid = prev_pid_at == std::string_view::npos
                        ? std::nullopt
                        : field_after(prev, " prev_pid=", prev_pid_at);
    auto prev_state = field_after(prev, " prev_state=", prev_pid_at == std::string_view::npos ? 0 : prev_pid_at);
    size_t next_pid_at = next.rfind(" next_pid=");
    auto next_pid = next_pid_at == std::string_view::npos
                        ? std::nullopt
                        : field_after(next, " next_pid=", next_pid_at);
    if (!prev_pid || !parse_number(*prev_pid, ev.prev_pid)) throw bad("bad or missing prev_pid");
    if (!next_pid || !parse_number(*next_pid, ev.next_pid)) throw bad("bad or missing next_pid");
    if (!prev_state || prev_state->empty()) throw bad("missing prev_state");
    ev.prev_state = std::string(*prev_state);
    // " ==> next_comm=<comm> next_pid=": the comm runs up to the last " next_pid=".
    const std::string_view kNextComm = " ==> next_comm=";
    if (next.substr(0, kNextComm.size()) == kNextComm && next_pid_at >= kNextComm.size())
        ev.next_comm = std::string(next.substr(kNextComm.size(), next_pid_at - kNextComm.size()));
    return ev;
}

std::optional<SchedSwitch> parse_running_stamp_line(std::string_view line) {
    const std::string_view kMarker = ": local_timer_entry: ";
    size_t marker = line.find(kMarker);
    if (marker == std::string_view::npos) return std::nullopt;
    auto bad = [&](const std::string& why) {
        return LoadError("local_timer_entry line '" + std::string(line) + "': " + why);
    };
    SchedSwitch ev;
    ev.running_stamp = true;
    // Header: "<comm>-<pid> [cpu] flags timestamp"; the comm may hold '-' and spaces, the pid is
    // the digits after the last '-' before the [cpu] field.
    std::string_view head = line.substr(0, marker);
    size_t ts_start = head.rfind(' ');
    if (ts_start == std::string_view::npos || !parse_timestamp(head.substr(ts_start + 1), ev.ts))
        throw bad("no timestamp before 'local_timer_entry:'");
    size_t cpu_close = head.rfind(']', ts_start);
    size_t cpu_open = cpu_close == std::string_view::npos ? cpu_close : head.rfind('[', cpu_close);
    if (cpu_open == std::string_view::npos ||
        !parse_number(head.substr(cpu_open + 1, cpu_close - cpu_open - 1), ev.cpu))
        throw bad("no [cpu] field");
    std::string_view task = head.substr(0, cpu_open);
    while (!task.empty() && task.back() == ' ') task.remove_suffix(1);
    size_t dash = task.rfind('-');
    if (dash == std::string_view::npos || !parse_number(task.substr(dash + 1), ev.prev_pid))
        throw bad("no <comm>-<pid> before the [cpu] field");
    ev.next_pid = ev.prev_pid;
    return ev;
}

std::optional<uint64_t> parse_lost_events_line(std::string_view line) {
    size_t pos = line.find("[LOST ");
    if (pos == std::string_view::npos) return std::nullopt;
    size_t start = pos + 6;
    size_t end = line.find(' ', start);
    uint64_t n = 0;
    if (end == std::string_view::npos || !parse_number(line.substr(start, end - start), n)) {
        return std::nullopt;
    }
    return n;
}

void SchedSwitchParser::line(std::string_view l) {
    if (l.empty()) return;
    if (auto ev = parse_sched_switch_line(l)) {
        events_.push_back(std::move(*ev));
    } else if (auto stamp = parse_running_stamp_line(l)) {
        events_.push_back(std::move(*stamp));
    } else if (auto lost = parse_lost_events_line(l)) {
        lost_ += *lost;
    } else {
        ++other_;  // headers ("# tracer: nop"), markers, other events
    }
}

void SchedSwitchParser::feed(std::string_view chunk) {
    size_t start = 0;
    for (;;) {
        size_t nl = chunk.find('\n', start);
        if (nl == std::string_view::npos) {
            partial_.append(chunk.substr(start));
            return;
        }
        if (partial_.empty()) {
            line(chunk.substr(start, nl - start));
        } else {
            partial_.append(chunk.substr(start, nl - start));
            std::string whole;
            whole.swap(partial_);
            line(whole);
        }
        start = nl + 1;
    }
}

void SchedSwitchParser::finish() {
    std::string rest;
    rest.swap(partial_);
    line(rest);
}

}  // namespace spinlab::load
