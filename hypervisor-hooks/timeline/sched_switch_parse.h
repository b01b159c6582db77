// Parsing of tracefs text output for the sched:sched_switch event, as trace_pipe prints it:
//
//   CPU 0/TCG-4242  [001] d..2. 1073392736050: sched_switch: prev_comm=CPU 0/TCG prev_pid=4242
//       prev_prio=120 prev_state=R+ ==> next_comm=swapper/1 next_pid=0 next_prio=120
//
// (one line). The timestamp is an integer for counter clocks (x86-tsc, counter) and
// "seconds.microseconds" for the nanosecond clocks (local, global, mono, boot); the latter is
// returned in ns. Comms may contain spaces, so fields are found by their "key=" from the right.
// "CPU:1 [LOST 12 EVENTS]" lines are counted, never silently dropped.
//
// It also reads the timer interrupt's irq_vectors:local_timer_entry lines,
//
//   CPU 0/TCG-4242  [001] d.h.. 1073392740000: local_timer_entry: vector=236
//
// as running stamps: the task named in the line header (comm-pid) was on that CPU then. A switch
// the kernel did not trace (run_intervals.h) is bounded by them. Pure: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spinlab::load {

struct SchedSwitch {
    uint64_t ts = 0;          // trace clock units (TSC ticks for x86-tsc, else ns)
    int cpu = -1;
    int prev_pid = 0;
    std::string prev_state;   // "R", "R+", "S", "D", ... why the previous task left the CPU
    int next_pid = 0;
    std::string next_comm{};  // the task given the CPU (its comm; may hold spaces); empty for stamps
    // Not a switch but a running stamp: prev_pid (== next_pid) was on `cpu` at ts.
    bool running_stamp = false;
};

// Checks the kernel's description of sched:sched_switch (events/sched/sched_switch/format) for
// what this parser reads from the text lines: the fields prev_pid, prev_state, next_pid, and a
// print format that writes them as "prev_pid=%d", "prev_state=%s", " ==> ", "next_pid=%d"
// (so it is on every kernel from 4.x to 6.18; 6.18's format file is in the tests). Throws
// LoadError naming what is missing: a kernel that changed it needs this parser changed.
void check_sched_switch_format(const std::string& format);

// One line; nullopt when the line is not a sched_switch record. Throws LoadError naming the
// line when it claims to be a sched_switch record but a field is malformed.
std::optional<SchedSwitch> parse_sched_switch_line(std::string_view line);
// One local_timer_entry line as a running stamp; nullopt when the line is not one. Throws
// LoadError naming the line when its header is malformed.
std::optional<SchedSwitch> parse_running_stamp_line(std::string_view line);
// The N of a "[LOST N EVENTS]" line, or nullopt.
std::optional<uint64_t> parse_lost_events_line(std::string_view line);

// Accepts trace_pipe text in arbitrary chunks (lines may be split across reads).
class SchedSwitchParser {
public:
    void feed(std::string_view chunk);
    // Parses a final line that had no newline.
    void finish();
    const std::vector<SchedSwitch>& events() const { return events_; }
    // The events parsed so far, handed over (the parser keeps none): for readers that
    // consume the trace as it comes.
    std::vector<SchedSwitch> take_events() { return std::exchange(events_, {}); }
    uint64_t lost_events() const { return lost_; }
    uint64_t other_lines() const { return other_; }

private:
    void line(std::string_view l);
    std::string partial_;
    std::vector<SchedSwitch> events_;
    uint64_t lost_ = 0;
    uint64_t other_ = 0;
};

}  // namespace spinlab::load
