// lib/format.h: a small freestanding printf (%d %u %x %lx %llu %s %c %p %%, width, '0' and '-'
// flags, %.*s precision). Written once, used by the kernel log, guest programs and host tests.
#pragma once
#include <stdarg.h>
#include <stddef.h>

// Writes at most size-1 characters and a NUL; returns the length the full output would have.
int vformat(char* buf, size_t size, const char* fmt, va_list ap);
int format(char* buf, size_t size, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
