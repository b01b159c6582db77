// experiments/runner/locations.cc: see locations.h.
#include "locations.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "spec.h"

#ifndef SPINLAB_SOURCE_DIR
#define SPINLAB_SOURCE_DIR "."
#endif
#ifndef SPINLAB_GIT_REV
#define SPINLAB_GIT_REV "unknown"
#endif

namespace fs = std::filesystem;

namespace spinlab::run {

Locations locations_for(const std::string& bin_dir, bool installed, const std::string& source_dir) {
    Locations l;
    l.bin_dir = bin_dir;
    if (installed) {
        l.spec_dir = (fs::path(bin_dir).parent_path() / "share" / "spinlab" / "experiments").string();
    } else {
        l.spec_dir = source_dir + "/experiments";
        l.source_dir = source_dir;
    }
    return l;
}

Locations locate() {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    std::string bin = ec ? std::string(".") : self.parent_path().string();
    bool installed = fs::is_directory(fs::path(bin).parent_path() / "share" / "spinlab" / "experiments", ec);
    return locations_for(bin, installed, SPINLAB_SOURCE_DIR);
}

// Specs renamed, as {old name, name} (issue 53): `--spec preempt` still runs freeze.ini.
const std::pair<const char*, const char*> kOldSpecNames[] = {{"preempt", "freeze"}};

std::string find_spec(const std::string& value, const std::string& spec_dir) {
    std::error_code ec;
    if (value.find('/') != std::string::npos || fs::is_regular_file(value, ec)) return value;
    for (const std::string& name : {value, value + ".ini"}) {
        fs::path p = fs::path(spec_dir) / name;
        if (fs::is_regular_file(p, ec)) return p.string();
    }
    for (auto [old, now] : kOldSpecNames)
        if (value == old || value == std::string(old) + ".ini") {
            fs::path p = fs::path(spec_dir) / (std::string(now) + ".ini");
            if (fs::is_regular_file(p, ec)) return p.string();
        }
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(spec_dir, ec))
        if (e.path().extension() == ".ini") names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw SpecError("--spec " + value + ": no such file, and no spec of that name in " + spec_dir +
                    (known.empty() ? " (it has none)" : " (there: " + known + ")"));
}

std::string build_revision() { return SPINLAB_GIT_REV; }

}  // namespace spinlab::run
