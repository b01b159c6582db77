// Small file-system helpers for /proc, /sys/fs/cgroup and tracefs. Every failure throws
// LoadError naming the path and the errno text, so a CLI error says exactly what failed.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace spinlab::load {

// The one error type of the library; messages name the option, value or path that was wrong.
struct LoadError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::string read_file(const std::string& path);
// Writes `text` in one write(2), as kernel control files require (a short write is an error).
void write_file(const std::string& path, const std::string& text);
// Same, but returns the errno instead of throwing (0 on success); for cleanup paths.
int try_write_file(const std::string& path, const std::string& text);
bool path_exists(const std::string& path);
bool is_directory(const std::string& path);
// Names of the entries of a directory (no "." and ".."), sorted; empty if it cannot be read.
std::vector<std::string> list_directory(const std::string& path);
std::string trim(const std::string& s);
std::vector<std::string> split(const std::string& s, char sep);
// Creates a directory and its missing parents (mode 0755).
void make_directories(const std::string& path);

}  // namespace spinlab::load
