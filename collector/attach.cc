// collector/attach.cc: see attach.h.
#include "attach.h"

#include <cstdlib>
#include <filesystem>

#include "hostlib/error.h"
#include "hostlib/run_dir.h"

namespace spinlab::collect {

AttachPaths resolve_attach(const AttachOptions& o) {
    AttachPaths p;
    p.socket = o.socket;
    p.shm = o.shm;
    if (!o.vm.empty()) {
        std::string run_dir = o.run_dir;
        if (run_dir.empty()) run_dir = spinlab::run_dir();
        if (o.vm.find('/') != std::string::npos || o.vm == "." || o.vm == "..")
            throw CollectError(kExitUsage, "--vm takes a VM name, not a path: '" + o.vm + "'");
        std::filesystem::path dir = std::filesystem::path(run_dir) / "vm" / o.vm;
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec))
            throw CollectError(kExitNoVm, "no VM named " + o.vm + ": " + dir.string() +
                                              " does not exist (is it running? start it with "
                                              "spinlab-vm)");
        if (p.socket.empty()) p.socket = (dir / "control.sock").string();
        if (p.shm.empty()) {
            std::filesystem::path shm = dir / "shm";
            if (std::filesystem::exists(shm, ec)) p.shm = shm.string();
        }
        p.what = "VM " + o.vm;
    } else if (!p.socket.empty()) {
        p.what = "socket " + p.socket;
    } else if (!p.shm.empty()) {
        p.what = "region " + p.shm;
    } else {
        throw CollectError(kExitUsage,
                           "nothing to attach to: give --vm NAME, or --socket and/or --shm");
    }
    return p;
}

}  // namespace spinlab::collect
