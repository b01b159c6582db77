// spinlab/enum_names.h: one table per named ABI enum, each value's name beside it.
//
// An enum whose values have names (LhpClass, LockAlgorithm, ClockSource, ...) is written once,
// as an X-macro table SPINLAB_<ENUM>(X) with one row X(enumerator, value, "name") per value,
// values 0, 1, 2, ... in order. One line declares everything that comes from that table:
//   SPINLAB_DENSE_ENUM(LhpClass, uint32_t, SPINLAB_LHP_CLASSES, kLhpClassNames, lhp_class_name);
// gives
//   - the enum itself (SPINLAB_ENUMERATOR rows),
//   - kXxxNames[], an EnumName per value in value order (SPINLAB_ENUM_NAME rows), checked at
//     compile time to hold the values 0, 1, ... in row order,
//   - xxx_name(Xxx), the value's name ("invalid" for a value the table does not have).
// From kXxxNames come the count (enum_count), the kernel's boot-option choices (join_names:
// "a|b|c"), spinlab-run's spec choices, and abi_names.json, the build's names file that the
// Python analysis reads (spinlab-abi-names).
// A table whose values are not 0, 1, ... (status codes, event types) is declared with
// SPINLAB_ENUM (the enum and kXxxNames only; its names are found with enum_find_name).
// So each name is spelled once, in its table; renaming one renames it everywhere.
//
// Freestanding (kernel, guest programs): no libc, no STL; everything is constexpr.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace spinlab {

struct EnumName {
    uint32_t value;
    const char* id;    // the C++ enumerator: "kHolderPreempted"
    const char* name;  // its one spelling: "holder-preempted"
};

// Row expanders for the SPINLAB_<ENUM>(X) tables.
#define SPINLAB_ENUMERATOR(id, value, name) id = value,
#define SPINLAB_ENUM_NAME(id, value, name) ::spinlab::EnumName{value, #id, name},

// Values 0, 1, ... in row order, so that kXxxNames[v] is value v's row.
template <size_t N>
constexpr bool enum_names_dense(const EnumName (&t)[N]) {
    for (size_t i = 0; i < N; ++i)
        if (t[i].value != i) return false;
    return true;
}

template <size_t N>
constexpr uint32_t enum_count(const EnumName (&)[N]) {
    return uint32_t(N);
}

// The name of value v, "invalid" for a value the table does not have.
template <size_t N>
constexpr const char* enum_name(const EnumName (&t)[N], uint32_t v) {
    return v < N ? t[v].name : "invalid";
}

// The enum `Enum` (underlying type `Underlying`) and its name table `names` from the X-macro
// table `TABLE`, values in any order.
#define SPINLAB_ENUM(Enum, Underlying, TABLE, names)                                            \
    enum class Enum : Underlying { TABLE(SPINLAB_ENUMERATOR) };                                 \
    inline constexpr ::spinlab::EnumName names[] = {TABLE(SPINLAB_ENUM_NAME)}

// The same for values 0, 1, ... in row order (checked), and name_fn(Enum): the value's name.
#define SPINLAB_DENSE_ENUM(Enum, Underlying, TABLE, names, name_fn)                             \
    SPINLAB_ENUM(Enum, Underlying, TABLE, names);                                               \
    constexpr const char* name_fn(Enum v) {                                                     \
        return ::spinlab::enum_name(names, uint32_t(v));                                        \
    }                                                                                           \
    static_assert(::spinlab::enum_names_dense(names), #Enum ": values 0, 1, ... in row order")

// The name of value v in a table whose values are not 0, 1, ... (status codes, event types):
// a search; `otherwise` for a value the table does not have.
template <size_t N>
constexpr const char* enum_find_name(const EnumName (&t)[N], uint32_t v, const char* otherwise) {
    for (const EnumName& e : t)
        if (e.value == v) return e.name;
    return otherwise;
}

// Every name joined by sep ("tas|ticket|mcs"), as a NUL-terminated array built at compile time:
//   constexpr auto kLockChoices = join_names<joined_size(kLockAlgorithmNames)>(kLockAlgorithmNames, '|');
template <size_t Size>
struct JoinedNames {
    char text[Size];
};

template <size_t N>
constexpr size_t joined_size(const EnumName (&t)[N]) {
    size_t n = 0;
    for (const EnumName& e : t) {
        for (const char* p = e.name; *p; ++p) ++n;
        ++n;  // the separator after it, or the final NUL
    }
    return n;
}

template <size_t Size, size_t N>
constexpr JoinedNames<Size> join_names(const EnumName (&t)[N], char sep) {
    JoinedNames<Size> out{};
    size_t at = 0;
    for (size_t i = 0; i < N; ++i) {
        if (i) out.text[at++] = sep;
        for (const char* p = t[i].name; *p; ++p) out.text[at++] = *p;
    }
    out.text[at] = '\0';
    return out;
}

}  // namespace spinlab
