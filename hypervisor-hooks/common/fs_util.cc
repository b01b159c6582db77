#include "fs_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace spinlab::load {

namespace {
std::string errno_text(int err) { return std::strerror(err); }
}  // namespace

std::string read_file(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw LoadError("cannot open " + path + ": " + errno_text(errno));
    std::string out;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            int err = errno;
            ::close(fd);
            throw LoadError("cannot read " + path + ": " + errno_text(err));
        }
        if (n == 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
}

int try_write_file(const std::string& path, const std::string& text) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    ssize_t n;
    do {
        n = ::write(fd, text.data(), text.size());
    } while (n < 0 && errno == EINTR);
    int err = n < 0 ? errno : (static_cast<size_t>(n) == text.size() ? 0 : EIO);
    if (::close(fd) < 0 && err == 0) err = errno;
    return err;
}

void write_file(const std::string& path, const std::string& text) {
    if (int err = try_write_file(path, text)) {
        throw LoadError("cannot write '" + trim(text) + "' to " + path + ": " + errno_text(err));
    }
}

bool path_exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

bool is_directory(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> list_directory(const std::string& path) {
    std::vector<std::string> names;
    DIR* dir = ::opendir(path.c_str());
    if (!dir) return names;
    while (struct dirent* e = ::readdir(dir)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    return names;
}

std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    size_t e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (;;) {
        size_t pos = s.find(sep, start);
        parts.push_back(s.substr(start, pos - start));
        if (pos == std::string::npos) break;
        start = pos + 1;
    }
    return parts;
}

void make_directories(const std::string& path) {
    for (size_t pos = 1; pos != std::string::npos;) {
        pos = path.find('/', pos + 1);
        std::string prefix = path.substr(0, pos);
        if (::mkdir(prefix.c_str(), 0755) < 0 && errno != EEXIST) {
            throw LoadError("cannot create directory " + prefix + ": " + errno_text(errno));
        }
    }
}

}  // namespace spinlab::load
