// The spinlab-load command line: `spinlab-load <command> [options]`, one options_description
// per titled group, parsed into a Command returned by value. The same long names work in a
// --config file (Boost's INI syntax: `freeze-ms = 10`), so a spec and a command line say the
// same thing the same way. Errors name the option and value; main prints them with the usage.
#pragma once

#include <string>
#include <vector>

#include "hypervisor-hooks/cleanup/command_session.h"
#include "hypervisor-hooks/freezes/freeze_command.h"
#include "hypervisor-hooks/hogs/hog.h"
#include "hypervisor-hooks/pinning/pin.h"
#include "hypervisor-hooks/throttling/throttle.h"
#include "hypervisor-hooks/timeline/timeline.h"

namespace spinlab::load {

struct Command {
    std::string name;  // hog, throttle, freeze, pin, timeline, cleanup, libvirt-args, run-dir
    bool help = false;
    std::string help_text;
    SessionOptions session;
    HogConfig hog;
    ThrottleConfig throttle;
    FreezeConfig freeze;
    PinConfig pin;
    TimelineConfig timeline;
    std::string domain_xml;  // libvirt-args: file, "-" for stdin
    int qemu_pid = 0;        // libvirt-args
};

// The command `name` names: `name` itself, for an old name the command's name (preempt: freeze),
// empty for none.
std::string command_named(const std::string& name);
// `args` excludes the program name; a command may be given by its old name (Command::name is
// its name). Throws LoadError (naming option and value) on bad input.
Command parse_command_line(const std::vector<std::string>& args);
// The usage of one command (by its name or old name), or the overview when `command` is empty;
// ends with EXAMPLES.
std::string usage_text(const std::string& command);
// Whether `option` of `command` is a switch without a value (for the libvirt metadata).
bool is_flag_option(const std::string& command, const std::string& option);
// Runs a parsed command; returns the exit code.
int run_command(const Command& command);
// main(): parse, run, print errors with the usage; never throws.
int run_cli(int argc, char** argv);

}  // namespace spinlab::load
