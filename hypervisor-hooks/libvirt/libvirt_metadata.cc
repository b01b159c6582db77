#include "libvirt_metadata.h"

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <set>
#include <sstream>

#include "hypervisor-hooks/cli/cli.h"
#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load {

namespace pt = boost::property_tree;

namespace {
std::string local_name(const std::string& qualified) {
    size_t colon = qualified.find(':');
    return colon == std::string::npos ? qualified : qualified.substr(colon + 1);
}

bool in_our_namespace(const pt::ptree& element) {
    auto attrs = element.get_child_optional("<xmlattr>");
    if (!attrs) return false;
    for (const auto& [name, value] : *attrs) {
        if ((name == "xmlns" || name.rfind("xmlns:", 0) == 0) && value.data() == kLibvirtNamespace) {
            return true;
        }
    }
    return false;
}

bool truthy(const std::string& element, const std::string& attr, const std::string& v) {
    if (v == "yes" || v == "true" || v == "1") return true;
    if (v == "no" || v == "false" || v == "0") return false;
    throw LoadError("spinlab metadata <" + element + " " + attr + "='" + v + "'>: must be yes or no");
}
}  // namespace

std::vector<std::vector<std::string>> load_commands_from_domain_xml(const std::string& xml,
                                                                   int qemu_pid) {
    pt::ptree tree;
    std::istringstream in(xml);
    try {
        pt::read_xml(in, tree);
    } catch (const pt::xml_parser_error& e) {
        throw LoadError("domain XML is malformed: " + e.message() + " at line " + std::to_string(e.line()));
    }
    auto metadata = tree.get_child_optional("domain.metadata");
    std::vector<std::vector<std::string>> commands;
    if (!metadata) return commands;
    static const std::set<std::string> kCommands = {"hog", "freeze", "throttle", "pin", "timeline"};
    static const std::set<std::string> kForbidden = {"tid", "qemu-pid", "qmp", "state-dir",
                                                     "survive-parent", "ready-file", "config", "help"};
    for (const auto& [name, element] : *metadata) {
        if (local_name(name) != "load" || !in_our_namespace(element)) continue;
        for (const auto& [command, spec] : element) {
            if (command == "<xmlattr>" || command == "<xmlcomment>") continue;
            // An element may name its command by its old name (<preempt>: freeze).
            const std::string name = command_named(command);
            if (!kCommands.count(name)) {
                throw LoadError("spinlab metadata: unknown element <" + command +
                                "> (expected hog, freeze, throttle, pin or timeline)");
            }
            std::vector<std::string> args{name};
            if (auto attrs = spec.get_child_optional("<xmlattr>")) {
                for (const auto& [attr, value] : *attrs) {
                    if (kForbidden.count(attr)) {
                        throw LoadError("spinlab metadata <" + command + ">: attribute '" + attr +
                                        "' is not allowed (the hook sets it)");
                    }
                    const std::string v = value.data();
                    if (v.find_first_of("\t\n") != std::string::npos) {
                        throw LoadError("spinlab metadata <" + command + " " + attr + ">: value has a tab or newline");
                    }
                    if (is_flag_option(name, attr)) {
                        if (truthy(command, attr, v)) args.push_back("--" + attr);
                    } else {
                        args.push_back("--" + attr);
                        args.push_back(v);
                    }
                }
            }
            if (name != "hog") {
                args.push_back("--qemu-pid");
                args.push_back(std::to_string(qemu_pid));
            }
            try {
                parse_command_line(args);  // the same checks as on a command line
            } catch (const LoadError& e) {
                throw LoadError("spinlab metadata <" + command + ">: " + e.what());
            }
            commands.push_back(args);
        }
    }
    return commands;
}

std::string format_command_lines(const std::vector<std::vector<std::string>>& commands) {
    std::string out;
    for (const auto& args : commands) {
        for (size_t i = 0; i < args.size(); ++i) out += (i ? "\t" : "") + args[i];
        out += "\n";
    }
    return out;
}

}  // namespace spinlab::load
