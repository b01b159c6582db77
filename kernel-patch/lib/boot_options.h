// lib/boot_options.h: the kernel command line, `key=value` words separated by spaces.
// Every key the kernel knows is declared in one table (kern/bootopts.cc); an unknown key, a
// missing '=', a value of the wrong kind or out of range is an error naming the word, and the
// kernel refuses to boot half-configured.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace bootopt {

enum class Kind : uint8_t { kUint, kString, kChoice, kRest };  // kRest: the rest of the line

struct Spec {
    const char* key;
    Kind kind;
    const char* choices;   // kChoice: '|'-separated names; the value is the index
    uint64_t min, max;     // kUint: inclusive range
    const char* help;
};

constexpr int kMaxValue = 256;

struct Value {
    bool set;
    uint64_t num;          // kUint value, or kChoice index
    char str[kMaxValue];   // kString / kRest (NUL-terminated)
};

struct Error {
    bool ok;
    char message[160];     // e.g. "unknown boot option 'lokc=mcs'"
};

// Parses line against specs[0..n); values[i] receives the option specs[i]. Later words
// override earlier ones. kRest takes everything after "key=" to the end of the line (used for
// init= with the program's own arguments).
Error parse(const char* line, const Spec* specs, int n, Value* values);

}  // namespace bootopt
