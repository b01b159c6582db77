#pragma once
// A test's scratch directory under /tmp, removed with everything in it when the object goes,
// so a test run leaves nothing behind in /tmp (a test killed by its timeout still can).
// SPINLAB_KEEP_TEST_DIRS=1 keeps them, to look at what a failing test read.

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "hypervisor-hooks/common/fs_util.h"

namespace spinlab::load::testing {

class ScratchDir {
public:
    // `name` becomes /tmp/<name>-XXXXXX.
    explicit ScratchDir(const std::string& name) {
        std::string tmpl = "/tmp/" + name + "-XXXXXX";
        if (!::mkdtemp(tmpl.data())) throw LoadError("mkdtemp failed for " + tmpl);
        path_ = tmpl;
    }
    ~ScratchDir() {
        if (const char* keep = ::getenv("SPINLAB_KEEP_TEST_DIRS"); keep && *keep && *keep != '0') return;
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;

    const std::string& path() const { return path_; }

private:
    std::string path_;
};

}  // namespace spinlab::load::testing
