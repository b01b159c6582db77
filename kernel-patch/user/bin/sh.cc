// sh: a tiny shell for interactive labs. Runs programs from /bin with arguments and prints
// their exit status. Built-ins: help, exit.
#include "../lib/ulib.h"

namespace {

const char* const kPrograms[] = {"hello", "fault", "usertest", "kmix", "spinstat", "lockbench", "par"};

void help() {
    printf("spinlab sh: run a program from /bin with arguments, e.g.\n"
           "  hello a b c          prints its arguments and CPU\n"
           "  usertest all         user-mode self-checks\n"
           "  fault divide         a program the kernel kills\n"
           "built-ins: help, exit. Programs in this image:");
    for (const char* p : kPrograms) printf(" %s", p);
    printf("\n");
}

}  // namespace

int main(int, char**) {
    printf("spinlab sh on %d CPUs; type 'help'\n", sys::cpu_count());
    char line[200];
    for (;;) {
        puts_raw("$ ");
        int64_t n = sys::read(0, line, sizeof line - 1);
        if (n < 0) return 1;
        line[n] = '\0';
        char* argv[spinlab::kMaxArgs + 1];
        int argc = 0;
        for (char* p = line; *p && argc < spinlab::kMaxArgs;) {
            while (*p == ' ') *p++ = '\0';
            if (!*p) break;
            argv[argc++] = p;
            while (*p && *p != ' ') p++;
        }
        argv[argc] = nullptr;
        if (argc == 0) continue;
        if (strcmp(argv[0], "exit") == 0) return 0;
        if (strcmp(argv[0], "help") == 0) {
            help();
            continue;
        }
        char path[spinlab::kMaxPath];
        {
            size_t k = 0;
            const char* pre = argv[0][0] == '/' ? "" : "/bin/";
            for (const char* q = pre; *q && k + 1 < sizeof path; q++) path[k++] = *q;
            for (const char* q = argv[0]; *q && k + 1 < sizeof path; q++) path[k++] = *q;
            path[k] = '\0';
        }
        int64_t pid = sys::spawn(path, argv);
        if (pid < 0) {
            printf("sh: %s: %s\n", argv[0], spinlab::error_name(pid));
            continue;
        }
        int32_t code = 0;
        sys::wait(int(pid), &code);
        if (code) printf("sh: %s exited with status %d\n", argv[0], code);
    }
}
