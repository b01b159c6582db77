// Parsing of the number lists the CLI takes: CPU lists in the kernel's cpulist form
// ("0-3,6"), thread id lists ("1234,1240") and vCPU index lists. Errors name the option.
#pragma once

#include <string>
#include <vector>

namespace spinlab::load {

// Parses "0-3,6,8-9" into sorted unique values. `option` names the option in errors.
// Rejects empty items, reversed ranges, negatives and values above `max_value`.
std::vector<int> parse_id_list(const std::string& text, const std::string& option,
                               int max_value = 1 << 22);
// Same syntax, but keeps the order given and rejects duplicates: for --tid, where the position
// is the vCPU index.
std::vector<int> parse_id_sequence(const std::string& text, const std::string& option);
// The inverse, compressed back into ranges: {0,1,2,5} -> "0-2,5".
std::string format_id_list(const std::vector<int>& ids);

}  // namespace spinlab::load
