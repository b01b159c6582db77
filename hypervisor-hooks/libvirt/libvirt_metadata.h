// The spinlab element a libvirt domain carries in <metadata> to ask the libvirt hook
// (libvirt-hook-qemu) for a load while it runs:
//
//   <metadata>
//     <spinlab:load xmlns:spinlab="https://spinlab.invalid/xmlns/load/1">
//       <hog cpus="0-1" duty="100" nice="0"/>
//       <freeze vcpus="0" freeze-ms="10" period-ms="100" schedule="uniform" seed="7"
//               out="/var/lib/spinlab/lab-freezes.csv"/>
//       <throttle vcpus="1" quota-pct="50"/>
//       <pin vcpus="0,1" cpus="0,1"/>
//       <timeline out="/var/lib/spinlab/lab-timeline.csv"/>
//     </spinlab:load>
//   </metadata>
//
// Each child is one spinlab-load command (<preempt>: old name of <freeze>, run as freeze); its
// attributes are that command's long options (flags take yes/no). The threads are always the domain's vCPUs (--qemu-pid is added), so
// tid, qemu-pid, qmp and the session options are not allowed. The prefix is free; the
// namespace URI is what identifies the element.
#pragma once

#include <string>
#include <vector>

namespace spinlab::load {

inline constexpr const char* kLibvirtNamespace = "https://spinlab.invalid/xmlns/load/1";

// The spinlab-load argument vectors (without the program name) the domain asks for, each
// already checked by the CLI parser. `qemu_pid` is added to commands that act on vCPUs.
// Throws LoadError naming the element and attribute that is wrong. No element: empty.
std::vector<std::vector<std::string>> load_commands_from_domain_xml(const std::string& xml,
                                                                   int qemu_pid);
// One command per line, arguments separated by tabs (no argument may contain a tab).
std::string format_command_lines(const std::vector<std::vector<std::string>>& commands);

}  // namespace spinlab::load
