// hostlib/run_dir.h: where spinlab keeps its runtime state (VM directories, spinlab-load's
// ledgers), the one rule every C++ tool follows (collector, spinlab-run, spinlab-load,
// spinlab-soak); Python's is spinlab_vm.state.run_dir(), and vm-images/tests/test_run_dir.py
// checks that the two agree (paths and refusals):
//     $SPINLAB_RUN_DIR                 when set and not empty
//     /run/spinlab                     for root
//     $XDG_RUNTIME_DIR/spinlab         for another user, when XDG_RUNTIME_DIR is set and not empty
//     /run/user/<uid>/spinlab          when /run/user/<uid> is a directory owned by the user (not
//                                      a symbolic link): the login's runtime directory, which
//                                      ssh without a login manager leaves unnamed
//     <TMPDIR>/spinlab-<uid>           otherwise; TMPDIR when it is an absolute path, else /tmp.
//                                      Created 0700; one that exists must be a directory (not
//                                      a symbolic link) of the user's that no one else may
//                                      write, else it is refused in one sentence naming the
//                                      path and its owner (/tmp is shared: a directory planted
//                                      there by another user is never used).
// <uid> is the effective user's; a SPINLAB_RUN_DIR is taken as given. run_dir() throws
// collect::CollectError (kExitUsage) with that sentence; resolve_run_dir() is the rule itself,
// with what it reads passed in.
#pragma once
#include <pwd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "hostlib/error.h"

namespace spinlab {

// What to tell a user who may not create it: how to choose another.
inline const char* run_dir_hint() {
    return "set SPINLAB_RUN_DIR (or XDG_RUNTIME_DIR, for a user other than root) to a directory you may write";
}

namespace run_dir_detail {
// `base` + "/" + `name`, without the doubled slash of a base that ends in one (as Python's
// pathlib writes it).
inline std::string join(std::string base, const std::string& name) {
    while (!base.empty() && base.back() == '/') base.pop_back();
    return base + "/" + name;
}

// "root (uid 0)", or "uid 1234" for a uid without a name.
inline std::string who(uid_t uid) {
    const passwd* pw = getpwuid(uid);
    const std::string id = "uid " + std::to_string(uid);
    return pw && pw->pw_name && *pw->pw_name ? std::string(pw->pw_name) + " (" + id + ")" : id;
}
}  // namespace run_dir_detail

// The last resort of a user other than root: <TMPDIR or /tmp>/spinlab-<uid>.
inline std::string tmp_run_dir(const char* tmpdir, uid_t uid) {
    const std::string base = tmpdir && tmpdir[0] == '/' ? tmpdir : "/tmp";
    return run_dir_detail::join(base, "spinlab-" + std::to_string(uid));
}

// The rule. `run_user`: where the logins' runtime directories are (/run/user; tests pass
// another).
inline std::string resolve_run_dir(const char* spinlab_run_dir, const char* xdg_runtime_dir, const char* tmpdir,
                                   uid_t uid, const std::string& run_user = "/run/user") {
    if (spinlab_run_dir && *spinlab_run_dir) return spinlab_run_dir;
    if (uid == 0) return "/run/spinlab";
    if (xdg_runtime_dir && *xdg_runtime_dir) return run_dir_detail::join(xdg_runtime_dir, "spinlab");
    const std::string login = run_dir_detail::join(run_user, std::to_string(uid));
    struct stat st;
    if (::lstat(login.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid)
        return run_dir_detail::join(login, "spinlab");
    return tmp_run_dir(tmpdir, uid);
}

// Makes `path` (the per-user directory under TMPDIR) with mode 0700 when it is not there, and
// checks what is there: "" when it is a directory of `uid`'s that only `uid` may write (or when
// it cannot be seen at all: creating it later fails and says so), else the sentence refusing it.
inline std::string claim_tmp_run_dir(const std::string& path, uid_t uid) {
    ::mkdir(path.c_str(), 0700);  // EEXIST (or a parent we may not write) is judged below
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return "";
    std::string what;
    if (S_ISLNK(st.st_mode)) {
        what = "it is a symbolic link, owned by " + run_dir_detail::who(st.st_uid);
    } else if (!S_ISDIR(st.st_mode)) {
        what = "it is not a directory; its owner is " + run_dir_detail::who(st.st_uid);
    } else if (st.st_uid != uid) {
        what = "it is owned by " + run_dir_detail::who(st.st_uid) + ", not by you, " + run_dir_detail::who(uid);
    } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
        what = "it is yours, " + run_dir_detail::who(uid) + ", but others may write it (mode " + mode + ")";
    } else {
        return "";
    }
    return "refusing the run directory " + path + ": " + what +
           ", and a run directory someone else controls is never used; remove it or " + run_dir_hint();
}

// The run directory of this process (its environment and effective user); throws
// collect::CollectError (kExitUsage) when the per-user directory under TMPDIR is refused.
inline std::string run_dir() {
    const uid_t uid = geteuid();
    const char* chosen = std::getenv("SPINLAB_RUN_DIR");
    const char* tmpdir = std::getenv("TMPDIR");
    std::string dir = resolve_run_dir(chosen, std::getenv("XDG_RUNTIME_DIR"), tmpdir, uid);
    if (!(chosen && *chosen) && dir == tmp_run_dir(tmpdir, uid))
        if (std::string why = claim_tmp_run_dir(dir, uid); !why.empty())
            throw collect::CollectError(collect::kExitUsage, why);
    return dir;
}

}  // namespace spinlab
