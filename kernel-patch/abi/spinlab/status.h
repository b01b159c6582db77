// spinlab/status.h: the status codes every system-information call returns.
//
// Shared ABI (kernel, guest programs, collector). NTSTATUS-style 32-bit codes with the
// same numbers Windows uses, so a reader who knows NtQuerySystemInformation /
// NtSetSystemInformation recognises them. Freestanding: only <stdint.h>.
#pragma once

#include <stdint.h>

namespace spinlab {

// The wire value is the uint32 underneath; any value may arrive from the other side,
// so status_name() must cope with numbers it does not know.
enum class Status : uint32_t {
    kSuccess = 0x00000000,
    // The information class (or sub-class) is not one this kernel serves in this direction.
    kInvalidInfoClass = 0xC0000003,
    // The buffer length is wrong for the class; the call's return length says what is needed.
    kInfoLengthMismatch = 0xC0000004,
    // A copy from or to the caller's buffer failed (bad user pointer, short channel frame).
    kAccessViolation = 0xC0000005,
    // The buffer was readable but its contents are refused (a value below its minimum,
    // a CPU or lock class that does not exist, unknown flags). Nothing was changed.
    kInvalidParameter = 0xC000000D,
    // Setting needs a privileged caller. Nothing was changed.
    kAccessDenied = 0xC0000022,
};

constexpr bool status_ok(Status s) {
    return s == Status::kSuccess;
}

// The Windows-style name ("STATUS_INVALID_PARAMETER"); "STATUS_UNKNOWN" for a number
// this header does not define. The result is a string literal: never null, never freed.
constexpr const char* status_name(Status s) {
    switch (s) {
        case Status::kSuccess:
            return "STATUS_SUCCESS";
        case Status::kInvalidInfoClass:
            return "STATUS_INVALID_INFO_CLASS";
        case Status::kInfoLengthMismatch:
            return "STATUS_INFO_LENGTH_MISMATCH";
        case Status::kAccessViolation:
            return "STATUS_ACCESS_VIOLATION";
        case Status::kInvalidParameter:
            return "STATUS_INVALID_PARAMETER";
        case Status::kAccessDenied:
            return "STATUS_ACCESS_DENIED";
    }
    return "STATUS_UNKNOWN";
}

constexpr const char* status_name(uint32_t raw) {
    return status_name(static_cast<Status>(raw));
}

static_assert(sizeof(Status) == 4, "status travels as a uint32");

}  // namespace spinlab
