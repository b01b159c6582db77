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

// Options: --name value or --name=value. Prints "prog: <problem>" and the usage on error.
enum class OptKind { kU64, kString, kFlag };
struct Opt {
    const char* name;        // "--threads"
    OptKind kind;
    void* value;             // uint64_t*, const char**, or bool*
    const char* help;
};
bool parse_opts(int argc, char** argv, const Opt* opts, int n, const char* summary,
                int* first_positional = nullptr);
void print_usage(const Opt* opts, int n, const char* summary);
