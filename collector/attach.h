// collector/attach.h: where a VM's control socket and shared region are.
//
// Explicit paths (--socket, --shm) win; --vm NAME resolves both through the run directory the
// VM launcher (spinlab-vm) fills in, see collector/README.md:
//     <run-dir>/vm/NAME/control.sock   the QEMU chardev socket of the guest's channel port
//     <run-dir>/vm/NAME/shm            the ivshmem memory-backend file (or a symlink to it)
// <run-dir> is --run-dir, else spinlab::run_dir() (hostlib/run_dir.h: $SPINLAB_RUN_DIR; for
// root /run/spinlab; else $XDG_RUNTIME_DIR/spinlab, /run/user/<uid>/spinlab when that is the
// user's, or ${TMPDIR:-/tmp}/spinlab-<uid>).
#pragma once
#include <string>

namespace spinlab::collect {

struct AttachOptions {
    std::string vm;
    std::string socket;
    std::string shm;
    std::string run_dir;  // empty: spinlab::run_dir()
};

struct AttachPaths {
    std::string socket;  // empty: no control channel available
    std::string shm;     // empty: no shared region available
    std::string what;    // "VM lab1" or "socket /tmp/x.sock", for messages
};

// Throws CollectError(kExitNoVm) when a named VM's directory does not exist, or when nothing at
// all was given to attach to. Does not check that the paths work: that is the caller's first
// use of them, which reports its own failure.
AttachPaths resolve_attach(const AttachOptions& o);

}  // namespace spinlab::collect
