// experiments/runner/text.h: the small text chores of the runner: a log file's last line for an
// error message, one line of a command's output, shell quoting, comma-joined id lists.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace spinlab::run {

// The whole file ("" when it cannot be read).
std::string read_text(const std::string& path);
// The last line of a file that is not blank ("" when none).
std::string last_line(const std::string& path);
// The first line of a shell command's output, without its newline ("" when it fails).
std::string command_line_output(const std::string& cmd);
// `s` in single quotes for /bin/sh.
std::string shell_quote(const std::string& s);
// "1,2,3".
std::string join_ids(const std::vector<uint64_t>& v);
std::string join_ids(const std::vector<uint32_t>& v);

}  // namespace spinlab::run
