// par: run several programs side by side and wait for all of them, so one init= line can start
// a workload and a background load together (the experiment runner runs lockbench and kmix so).
//   par /bin/lockbench --duration-ms 0 -- /bin/kmix --duration-ms 0
// Exits with the first non-zero status among them (0 when all succeeded).
#include "../lib/ulib.h"

int main(int argc, char** argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        eprintf("usage: par PROGRAM ARGS... [-- PROGRAM ARGS...]...\n"
                "Starts every PROGRAM at once, waits for all; exits with the first failure.\n");
        return 2;
    }
    int64_t pids[16];
    const char* names[16];
    int n = 0;
    for (int i = 1; i < argc;) {
        int j = i;
        while (j < argc && strcmp(argv[j], "--") != 0) j++;
        if (j == i) {
            eprintf("par: empty command at argument %d\n", i);
            return 2;
        }
        if (n == 16) {
            eprintf("par: at most 16 programs\n");
            return 2;
        }
        argv[j < argc ? j : argc] = nullptr;  // cut argv at "--": the command's own argv
        names[n] = argv[i];
        pids[n] = sys::spawn(argv[i], argv + i);
        if (pids[n] < 0) {
            eprintf("par: %s: %s\n", argv[i], spinlab::error_name(pids[n]));
            return 1;
        }
        n++;
        i = j + 1;
    }
    int status = 0;
    for (int k = 0; k < n; k++) {
        int32_t code = 0;
        sys::wait(int(pids[k]), &code);
        if (code) eprintf("par: %s exited with status %d\n", names[k], code);
        if (code && !status) status = code;
    }
    return status;
}
