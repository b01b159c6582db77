// hostlib/run_dir.h: where spinlab keeps its runtime state (VM directories, spinlab-load's
// ledgers), the one rule every C++ tool follows (collector, spinlab-run, spinlab-load,
// spinlab-soak); Python's is spinlab_vm.state.run_dir(), and vm-images/tests/test_run_dir.py
// checks that the two agree:
//     $SPINLAB_RUN_DIR                 when set and not empty
//     $XDG_RUNTIME_DIR/spinlab         for a user other than root, when XDG_RUNTIME_DIR is set
//     /run/spinlab                     otherwise
#pragma once
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace spinlab {

inline std::string resolve_run_dir(const char* spinlab_run_dir, const char* xdg_runtime_dir, bool root) {
    if (spinlab_run_dir && *spinlab_run_dir) return spinlab_run_dir;
    if (!root && xdg_runtime_dir && *xdg_runtime_dir) return std::string(xdg_runtime_dir) + "/spinlab";
    return "/run/spinlab";
}

// The run directory of this process (its environment and effective user).
inline std::string run_dir() {
    return resolve_run_dir(std::getenv("SPINLAB_RUN_DIR"), std::getenv("XDG_RUNTIME_DIR"), geteuid() == 0);
}

// What to tell a user who may not create it: how to choose another.
inline const char* run_dir_hint() {
    return "set SPINLAB_RUN_DIR (or XDG_RUNTIME_DIR, for a user other than root) to a directory you may write";
}

}  // namespace spinlab
