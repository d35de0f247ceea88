#if canImport(Glibc)
import Glibc
#endif
import Appliance

exit(Runner.main(Array(CommandLine.arguments.dropFirst())))
