// user/lib/ulib.h: the runtime every guest program links: output, strings, memory, threads,
// a user-level spinlock and command-line options.
#pragma once
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "sys.h"

int main(int argc, char** argv);   // each program defines it

int printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
int eprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));  // to fd 2
void puts_raw(const char* s);
size_t strlen(const char* s);
int strcmp(const char* a, const char* b);
bool starts_with(const char* s, const char* prefix);
bool parse_u64(const char* s, uint64_t* out);   // decimal, or 0x hex; false if not a number
const char* prog_name();                        // argv[0] without directories

extern "C" void* memset(void* d, int c, size_t n);
extern "C" void* memcpy(void* d, const void* s, size_t n);
extern "C" int memcmp(const void* a, const void* b, size_t n);
void* malloc(size_t n);
void free(void* p);

// A user-level test-and-set lock (for the runtime itself; the lock algorithms under study are
// in kernel-patch/spinlock and used by lockbench).
struct ULock {
    volatile uint32_t word = 0;
    void lock();
    void unlock();
};

// Threads: stack from map_anon; fn(arg) runs, then the thread exits with code 0.
int thread_start(void (*fn)(void*), void* arg, size_t stack_size = 64 * 1024);

// Options: --name value or --name=value. A program's options are a table of rows, each made by
// the function of its kind, so that the variable's type matches the kind:
//   flag_opt("--verify", &verify, help)                  bool: true when given
//   u64_opt("--locks", &nlocks, help, 1, kMaxLocks)      a number, refused outside [min, max]
//   text_opt("--class", &cls, help)                      any word
//   choice_opt("--pattern", &pattern, "same|spread|random", help)   one of the '|'-separated words
// parse_opts checks every value it is given against its row; on a bad option or value it prints
// "prog: <problem>" and returns false (--help: the usage), and the program exits with 2.
enum class OptKind { kU64, kString, kFlag, kChoice };
struct Opt {
    const char* name;        // "--threads"
    OptKind kind;
    void* value;             // uint64_t*, const char** (kString, kChoice), or bool*
    const char* help;
    uint64_t min = 0, max = ~0ull;  // kU64: the values accepted
    const char* choices = nullptr;  // kChoice: the words accepted, "same|spread|random"
};
constexpr Opt flag_opt(const char* name, bool* value, const char* help) {
    return {name, OptKind::kFlag, value, help};
}
constexpr Opt u64_opt(const char* name, uint64_t* value, const char* help, uint64_t min = 0,
                      uint64_t max = ~0ull) {
    return {name, OptKind::kU64, value, help, min, max};
}
constexpr Opt text_opt(const char* name, const char** value, const char* help) {
    return {name, OptKind::kString, value, help};
}
constexpr Opt choice_opt(const char* name, const char** value, const char* choices, const char* help) {
    return {name, OptKind::kChoice, value, help, 0, ~0ull, choices};
}
bool parse_opts(int argc, char** argv, const Opt* opts, int n, const char* summary,
                int* first_positional = nullptr);
template <int N>
bool parse_opts(int argc, char** argv, const Opt (&opts)[N], const char* summary,
                int* first_positional = nullptr) {
    return parse_opts(argc, argv, opts, N, summary, first_positional);
}
void print_usage(const Opt* opts, int n, const char* summary);
// Whether `word` is one of the '|'-separated words of `choices` ("same|spread|random").
bool is_choice(const char* choices, const char* word);
