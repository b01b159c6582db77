// collector/commands.h: the subcommands of spinlab-collect. Each returns the exit status and
// writes results to `out`, diagnostics to `err`; failures are thrown as CollectError.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "options.h"
#include "session.h"

namespace spinlab::collect {

int run_command(const Config& c, std::ostream& out, std::ostream& err);

int run_query(Session& s, const Config& c, std::ostream& out, std::ostream& err);
int run_set(Session& s, const Config& c, std::ostream& out, std::ostream& err);
int run_reset(Session& s, const Config& c, std::ostream& out, std::ostream& err);
int run_info(Session& s, const Config& c, std::ostream& out, std::ostream& err);
int run_watch(Session& s, const Config& c, std::ostream& out, std::ostream& err);
int run_record(Session& s, const Config& c, std::ostream& out, std::ostream& err);
int run_trace(Session& s, const Config& c, std::ostream& out, std::ostream& err);
// trace dump FILE: needs no guest.
int run_trace_dump(const Config& c, std::ostream& out, std::ostream& err);
// `trace export FILE --format ctf|perfetto -o OUT` (no guest needed): trace_export_command.cc.
int run_trace_export(const Config& c, std::ostream& out, std::ostream& err);
// trace stacks FILE... -o DIR: folded stacks and the top lock call sites (no guest needed).
int run_trace_stacks(const Config& c, std::ostream& out, std::ostream& err);

// --class values (names or ids) to ids. Throws CollectError(kExitUsage) naming an unknown one.
std::vector<uint32_t> select_classes(const std::vector<std::string>& wanted,
                                     const ClassNames& names);
// The classes a report shows: the selected ones, else those with acquisitions (or all
// named ones with --all-classes).
std::vector<uint32_t> classes_to_show(const Config& c, const ClassNames& names,
                                      const Snapshot& s);

// SIGINT/SIGTERM end watch and record cleanly (the file keeps a final line).
void install_stop_handlers();
bool stop_requested();

}  // namespace spinlab::collect
