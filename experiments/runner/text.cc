// experiments/runner/text.cc: see text.h.
#include "text.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace spinlab::run {

std::string read_text(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string last_line(const std::string& path) {
    std::istringstream in(read_text(path));
    std::string line, last;
    while (std::getline(in, line))
        if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
    return last;
}

std::string command_line_output(const std::string& cmd) {
    FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r");
    if (!p) return "";
    char buf[512];
    std::string out;
    if (fgets(buf, sizeof buf, p)) out = buf;
    pclose(p);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
}

std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

namespace {
template <typename T>
std::string join(const std::vector<T>& v) {
    std::string s;
    for (T x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
    return s;
}
}  // namespace

std::string join_ids(const std::vector<uint64_t>& v) { return join(v); }
std::string join_ids(const std::vector<uint32_t>& v) { return join(v); }

}  // namespace spinlab::run
