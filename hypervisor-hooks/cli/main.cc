// spinlab-load: everything lives in the library (cli.cc); see `spinlab-load --help`.
#include "cli.h"

int main(int argc, char** argv) { return spinlab::load::run_cli(argc, argv); }
