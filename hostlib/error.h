// hostlib/error.h: the one exception the host tools' shared code throws (the collector's, and the
// region mapper's for spinlab-load and spinlab-run). Its message is one sentence a person can act
// on ("no VM named lab1: /run/spinlab/vm/lab1 does not exist"); main() prints it and exits with
// `exit_code`. Nothing below main() calls exit().
#pragma once
#include <stdexcept>
#include <string>

namespace spinlab::collect {

enum ExitCode : int {
    kExitOk = 0,
    kExitFailure = 1,   // the guest refused a request, or the command failed
    kExitUsage = 2,     // bad command line or config file
    kExitNoVm = 3,      // nothing to attach to, or the guest does not answer (timeout)
    kExitAbi = 4,       // ABI version mismatch between collector and guest
    kExitGuestGone = 5, // the guest went away during watch/record (data kept)
    kExitCorrupt = 6,   // the guest's shared region breaks its own rules (a bad offset, a
                        // counter that went backwards): the message names the field and the
                        // CPU; everything taken before it is kept in the output
};

// The message of a kExitCorrupt error: "corrupt shared region PATH: WHAT" (WHAT names the field
// and the CPU: "cpu 3: produced went backwards").
inline std::string corrupt_region_message(const std::string& path, const std::string& what) {
    return "corrupt shared region " + path + ": " + what;
}

class CollectError : public std::runtime_error {
public:
    CollectError(int exit_code, const std::string& message)
        : std::runtime_error(message), exit_code_(exit_code) {}
    int exit_code() const { return exit_code_; }

private:
    int exit_code_;
};

}  // namespace spinlab::collect
