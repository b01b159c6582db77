#include "id_list.h"

#include <algorithm>
#include <charconv>

#include "fs_util.h"

namespace spinlab::load {

namespace {
int parse_one(const std::string& item, const std::string& text, const std::string& option,
              int max_value) {
    int value = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || value < 0) {
        throw LoadError("--" + option + " '" + text + "': '" + item +
                        "' is not a non-negative integer");
    }
    if (value > max_value) {
        throw LoadError("--" + option + " '" + text + "': " + item + " is above the maximum " +
                        std::to_string(max_value));
    }
    return value;
}
}  // namespace

namespace {
std::vector<int> parse_in_order(const std::string& text, const std::string& option, int max_value) {
    if (trim(text).empty()) throw LoadError("--" + option + " is empty");
    std::vector<int> ids;
    for (const std::string& raw : split(trim(text), ',')) {
        std::string item = trim(raw);
        size_t dash = item.find('-');
        if (dash == std::string::npos) {
            ids.push_back(parse_one(item, text, option, max_value));
            continue;
        }
        int lo = parse_one(item.substr(0, dash), text, option, max_value);
        int hi = parse_one(item.substr(dash + 1), text, option, max_value);
        if (hi < lo) {
            throw LoadError("--" + option + " '" + text + "': range " + item + " is reversed");
        }
        for (int v = lo; v <= hi; ++v) ids.push_back(v);
    }
    return ids;
}
}  // namespace

std::vector<int> parse_id_list(const std::string& text, const std::string& option, int max_value) {
    std::vector<int> ids = parse_in_order(text, option, max_value);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
}

std::vector<int> parse_id_sequence(const std::string& text, const std::string& option) {
    std::vector<int> ids = parse_in_order(text, option, 1 << 22);
    std::vector<int> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end()) {
        throw LoadError("--" + option + " '" + text + "': " + std::to_string(*dup) + " is given twice");
    }
    return ids;
}

std::string format_id_list(const std::vector<int>& ids) {
    std::string out;
    for (size_t i = 0; i < ids.size();) {
        size_t j = i;
        while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
        if (!out.empty()) out += ',';
        out += std::to_string(ids[i]);
        if (j > i) out += '-' + std::to_string(ids[j]);
        i = j + 1;
    }
    return out;
}

}  // namespace spinlab::load
