// collector/main.cc: spinlab-collect. Everything is in the library; this prints errors.
#include <iostream>

#include "commands.h"
#include "hostlib/error.h"
#include "options.h"

int main(int argc, char** argv) {
    using namespace spinlab::collect;
    try {
        ParsedArgs args = parse_args(argc, argv);
        if (args.help) {
            std::cout << args.usage;
            return kExitOk;
        }
        return run_command(args.config, std::cout, std::cerr);
    } catch (const CollectError& e) {
        std::cerr << "spinlab-collect: " << e.what() << "\n";
        if (e.exit_code() == kExitUsage) std::cerr << "Try 'spinlab-collect --help'.\n";
        return e.exit_code();
    } catch (const std::exception& e) {
        std::cerr << "spinlab-collect: " << e.what() << "\n";
        return kExitFailure;
    }
}
