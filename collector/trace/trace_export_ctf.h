// collector/trace/trace_export_ctf.h: a trace file as a CTF 1.8 trace (babeltrace2, Trace Compass).
//
//   DIR/metadata      TSDL text: generated from the ABI structs (trace_export_fields.h)
//   DIR/stream_<cpu>  one stream file per CPU; one packet per trace buffer
//
// Every stream starts with an empty packet (sequence number 0, no event discarded) at the
// session's start, so the first buffer's losses are a difference babeltrace2 can report too.
// Buffer s of a CPU is packet s + 1:
//   packet.context  timestamp_begin/end   the buffer's first_tsc/last_tsc (guest TSC)
//                   events_discarded      the CPU's EventsLost when it published the buffer
//                                         (the exact loss counter: differences between packets
//                                         are babeltrace2's discarded-events messages)
//                   packet_seq_num        sequence + 1: buffers missing from the file (circular
//                                         overwrites, damage) are discarded-packets messages
//                   cpu_id
//   event.header    id = the event type, timestamp = the header's tsc
//   event.context   thread_id, process_id
//   payload         the ABI payload after the event header, byte for byte.
// The clock class counts guest TSC cycles at the file's tsc_hz. With a clock correlation
// (clock.json) its offset puts the trace's first event at its host time (host TSC / the host's
// TSC rate, clock.json's host_tsc_hz; where that is not stated, host TSC read at the guest's
// rate), so timestamps read as seconds since the host TSC's zero; the correlation's later steps
// and drift are not in a CTF clock class (one constant offset).
#pragma once
#include <string>

#include "clock_sync.h"
#include "trace_export_input.h"

namespace spinlab::collect {

// Offset (host - guest cycles) for the clock class, from a correlation; 0 without one.
int64_t ctf_clock_offset(const LoadedTrace& t, const ClockFit* clock);

// The TSDL metadata text.
std::string ctf_metadata(const LoadedTrace& t, int64_t clock_offset, bool correlated);

// Writes DIR (created if missing; existing metadata/stream files are replaced). Throws
// CollectError on a write failure, naming the file.
void write_ctf(const LoadedTrace& t, const ClockFit* clock, const std::string& dir);

}  // namespace spinlab::collect
