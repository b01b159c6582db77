// collector/reset_command.cc: `reset`: zero counters through the guest's handler (the guest
// resets each CPU on that CPU, so no record is half counted).
#include <spinlab/status.h>
#include <spinlab/sysinfo.h>

#include "commands.h"
#include "hostlib/error.h"

namespace spinlab::collect {

int run_reset(Session& s, const Config& c, std::ostream& out, std::ostream& err) {
    std::vector<uint32_t> classes{kAllLockClasses};
    if (!c.classes.empty()) {
        std::string warning;
        classes = select_classes(c.classes, s.class_names(&warning));
    }
    for (uint32_t cls : classes) {
        ResetRequest req{c.cpu.value_or(kAllCpus), cls};
        CallResult r = s.channel().set(uint32_t(InfoClass::kSpinlabResetCounters), 0,
                                       {reinterpret_cast<const uint8_t*>(&req), sizeof req});
        if (r.status != uint32_t(Status::kSuccess)) {
            err << "spinlab-collect: reset refused: " << status_name(r.status) << "\n";
            return kExitFailure;
        }
    }
    out << "reset " << (c.cpu ? "CPU " + std::to_string(*c.cpu) : std::string("all CPUs"))
        << ", " << (c.classes.empty() ? std::string("all classes")
                                       : std::to_string(classes.size()) + " class(es)")
        << "\n";
    return 0;
}

}  // namespace spinlab::collect
