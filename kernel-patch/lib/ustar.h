// lib/ustar.h: read files out of a POSIX ustar archive (the initial ramdisk). Pure.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace ustar {

struct File {
    const char* name;     // points into a caller buffer filled by next(); NUL-terminated
    const uint8_t* data;
    uint64_t size;
};

class Reader {
public:
    Reader(const uint8_t* archive, size_t size) : a_(archive), size_(size) {}
    // Fills f with the next regular file; false at the end or on a damaged header (then
    // damaged() says so).
    bool next(File* f);
    bool damaged() const { return damaged_; }

private:
    const uint8_t* a_;
    size_t size_;
    size_t off_ = 0;
    bool damaged_ = false;
    char name_[256];
};

// Finds name (a leading "/" or "./" on either side is ignored); false if absent.
bool find(const uint8_t* archive, size_t size, const char* name, File* out);

}  // namespace ustar
