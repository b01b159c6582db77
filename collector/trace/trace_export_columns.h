// collector/trace/trace_export_columns.h: a trace file as columns, one NumPy table per event type
// (`trace export FILE --format columns -o DIR`), for analysis in numpy without a per-event loop.
//
//   DIR/<type>.npy         one per event type that has events, named as the CTF event classes
//                          (spinlab/trace.h's event type names: spinlock, cswitch, ...): a
//                          NumPy .npy file, format 1.0, holding a 1-D packed structured array,
//                          one row per event, in file order (each CPU's buffers by sequence,
//                          CPUs in order; readers sort):
//       tsc               <u8  the event header's TSC (the CTF event clock's value)
//       cpu               <u4  the CPU whose buffer held it (the CTF packet's cpu_id)
//       event_thread_id   <u4  the event header's thread_id and process_id (the CTF event
//       event_process_id  <u4  context); prefixed because payloads have their own thread_id/process_id
//       index             <u8  the event's place in that order over all types (0, 1, ...): ties
//                              of (tsc, cpu) across types sort as in the file
//       then every payload field of the type, named and typed as the ABI member
//       (trace_export_fields.h, the table the CTF metadata is made from): <uN/<iN scalars,
//       ('<u8', (N,)) arrays, |SN char arrays (text to the first NUL: bytes a guest left
//       after it are cleared, as a CTF reader ends the text there). No padding: a row is the 28
//       common bytes plus the ABI payload byte for byte (but for those cleared bytes).
//   DIR/<type>.frames.npy  for the stack types (trace_event_has_frames) that have events: every
//                          row's frames, concatenated in row order, as one 1-D <u8 array (row
//                          i's are its nframes after those of rows 0..i-1).
//   DIR/meta.json          {"format": "spinlab-trace-columns", "version": 1, "tsc_hz",
//                          "cpu_count", "events_discarded", "events": {type: rows}}, written
//                          last. events_discarded: the events the guest lost (EventsLost), all
//                          CPUs: each buffer header's events_lost is the CPU's running counter
//                          when it published the buffer, so a CPU's loss is its newest buffer's
//                          value (what the CTF export's packets carry, as differences).
// Files of types without events left by an earlier export in DIR are removed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trace_export_input.h"

namespace spinlab::collect {

inline constexpr const char* kColumnsFormat = "spinlab-trace-columns";
inline constexpr int kColumnsVersion = 1;

// One column of a table: its name and NumPy type string ("<u8", "|S16"), and its element count
// (1: a scalar; N: a subarray of N elements).
struct NpyColumn {
    std::string name;
    std::string type;
    uint32_t count = 1;
};

// The columns of an event type's table: the common ones, then its payload fields.
std::vector<NpyColumn> columns_of(uint16_t type);

// The .npy format 1.0 preamble and header of a 1-D array of `rows` rows of these columns
// (magic, version, header length, the dict padded so that the data starts at a multiple of 64).
std::string npy_header(const std::vector<NpyColumn>& columns, uint64_t rows);
// The same for a descr as written in the header: "'<u8'" (a plain array), "[('tsc', '<u8'), ...]".
std::string npy_header(const std::string& descr, uint64_t rows);

// EventsLost of every CPU together (see above).
uint64_t events_discarded(const LoadedTrace& t);

// Writes DIR (created if missing). Throws CollectError on a write failure, naming the file.
void write_columns(const LoadedTrace& t, const std::string& dir);

}  // namespace spinlab::collect
