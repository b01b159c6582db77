// collector/trace/trace_text.h: trace events as text, one line per event (`spinlab-collect trace
// dump`): for people and for tests. The line is stable: fields in a fixed order, `name=value`.
//
//   <tsc> cpu=<n> thread_id=<t> process_id=<p> <type> <payload fields...>
//
// Every key is the name of its field in spinlab/trace.h (the header, then the payload struct in
// declaration order), the names the CTF, Perfetto and column exports use; values of an enum are
// its names (lhp_class=holder-preempted, rules=contention,long-wait), addresses hex, a CPU that is
// not known "-"; a stack event ends with its frames (frames=0x..,0x..).
#pragma once
#include <spinlab/trace.h>

#include <cstdint>
#include <string>

#include "locktrace/trace_file.h"

namespace spinlab::collect {

// One event (header already checked by the buffer parser; ev points at its first byte).
std::string trace_event_line(const TraceEventHeader& h, const uint8_t* ev);

// Why a trace file's header was refused (parse_file_header's error), for messages: a version no
// reader knows is named with the versions this build reads ("trace file of ABI version 7, which
// this spinlab does not read (it reads versions 1 and 2)").
std::string trace_file_error_text(locktrace::FileError e, const void* data, size_t len);

// The loss counters as one line: "events_attempted=.. events_written=.. ...".
std::string trace_counters_line(const TraceLossCounters& c);

}  // namespace spinlab::collect
