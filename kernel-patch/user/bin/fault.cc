// fault: does something a program must not, so the kernel kills it (and only it).
//   fault read-kernel | write-kernel | unmapped | gp | ud | divide | exec-data | write-text
#include "../lib/ulib.h"

namespace {
volatile int zero = 0;
int data_word = 0xc3;  // `ret`, in a non-executable page
}

int main(int argc, char** argv) {
    const char* what = argc > 1 ? argv[1] : "unmapped";
    printf("fault: %s\n", what);
    if (strcmp(what, "read-kernel") == 0) return *reinterpret_cast<volatile int*>(0x100000);
    if (strcmp(what, "write-kernel") == 0) *reinterpret_cast<volatile int*>(0x100000) = 1;
    if (strcmp(what, "unmapped") == 0) return *reinterpret_cast<volatile int*>(0x9000000000ull);
    if (strcmp(what, "gp") == 0) asm volatile("cli");  // privileged instruction
    if (strcmp(what, "ud") == 0) asm volatile("ud2");  // a real invalid opcode, not int $0x80
    if (strcmp(what, "divide") == 0) return 100 / zero;  // (1 / x is compiled without a division)
    if (strcmp(what, "exec-data") == 0) reinterpret_cast<void (*)()>(&data_word)();
    if (strcmp(what, "write-text") == 0) *reinterpret_cast<volatile uint8_t*>(&main) = 0x90;
    eprintf("fault: '%s' did not fault\n", what);
    return 1;
}
