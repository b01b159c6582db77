// hello: prints its arguments and where it runs; exits with --exit N.
#include "../lib/ulib.h"

int main(int argc, char** argv) {
    if (argc == 3 && strcmp(argv[1], "--exit") == 0) {  // quiet: used by kmix and tests
        uint64_t code = 0;
        parse_u64(argv[2], &code);
        return int(code);
    }
    printf("hello from pid %ld on cpu %d of %d (%s)\n", sys::getpid(), sys::cpu_number(),
           sys::cpu_count(), sys::privileged() ? "privileged" : "unprivileged");
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--exit") == 0 && i + 1 < argc) {
            uint64_t code = 0;
            parse_u64(argv[i + 1], &code);
            return int(code);
        }
        printf("argv[%d] = '%s'\n", i, argv[i]);
    }
    return 0;
}
