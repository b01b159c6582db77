// spinlab/status.h: the status codes every system-information call returns.
//
// Shared ABI (kernel, guest programs, collector). NTSTATUS-style 32-bit codes with the
// same numbers Windows uses, so a reader who knows NtQuerySystemInformation /
// NtSetSystemInformation recognises them. Freestanding: <stdint.h> and enum_names.h.
#pragma once

#include <stdint.h>

#include <spinlab/enum_names.h>

namespace spinlab {

// One row per status: X(enumerator, value, Windows-style name). The wire value is the uint32
// underneath; any value may arrive from the other side, so status_name() must cope with numbers
// it does not know.
#define SPINLAB_STATUSES(X)                                                                         \
    X(kSuccess, 0x00000000, "STATUS_SUCCESS")                                                      \
    /* The information class (or sub-class) is not one this kernel serves in this direction. */     \
    X(kInvalidInfoClass, 0xC0000003, "STATUS_INVALID_INFO_CLASS")                                  \
    /* The buffer length is wrong for the class; the call's return length says what is needed. */   \
    X(kInfoLengthMismatch, 0xC0000004, "STATUS_INFO_LENGTH_MISMATCH")                              \
    /* A copy from or to the caller's buffer failed (bad user pointer, short channel frame). */     \
    X(kAccessViolation, 0xC0000005, "STATUS_ACCESS_VIOLATION")                                     \
    /* The buffer was readable but its contents are refused (a value below its minimum, a CPU or    \
       lock class that does not exist, unknown flags). Nothing was changed. */                      \
    X(kInvalidParameter, 0xC000000D, "STATUS_INVALID_PARAMETER")                                   \
    /* Setting needs a privileged caller. Nothing was changed. */                                   \
    X(kAccessDenied, 0xC0000022, "STATUS_ACCESS_DENIED")
SPINLAB_ENUM(Status, uint32_t, SPINLAB_STATUSES, kStatusNames);

constexpr bool status_ok(Status s) {
    return s == Status::kSuccess;
}

// The Windows-style name ("STATUS_INVALID_PARAMETER"); "STATUS_UNKNOWN" for a number
// this header does not define. The result is a string literal: never null, never freed.
constexpr const char* status_name(Status s) {
    return enum_find_name(kStatusNames, uint32_t(s), "STATUS_UNKNOWN");
}

constexpr const char* status_name(uint32_t raw) {
    return status_name(static_cast<Status>(raw));
}

static_assert(sizeof(Status) == 4, "status travels as a uint32");

}  // namespace spinlab
