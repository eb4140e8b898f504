import FoundationEssentials
import Glibc
import PortvaktApp

// Everything lives in PortvaktApp: top-level code here is MainActor-isolated, and libmicrohttpd
// calls handlers on its own threads.
exit(
    PortvaktCLI.run(
        Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
