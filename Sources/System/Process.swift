#if canImport(Glibc)
import Glibc
#endif

/// A POSIX signal number.
public struct Signal: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    public static let interrupt = Signal(rawValue: SIGINT)
    public static let terminate = Signal(rawValue: SIGTERM)
    public static let user1 = Signal(rawValue: SIGUSR1)
    public static let brokenPipe = Signal(rawValue: SIGPIPE)
    public static let kill = Signal(rawValue: SIGKILL)
    /// "INT", "TERM", as kill -l names them.
    public var description: String {
        switch self {
        case .interrupt: return "INT"
        case .terminate: return "TERM"
        case .user1: return "USR1"
        case .brokenPipe: return "PIPE"
        case .kill: return "KILL"
        default: return "\(rawValue)"
        }
    }
}

/// A set of signals taken by one thread with sigwait(3): blocked in every thread first
/// (`blockInEveryThread`, before any thread starts, so the threads inherit the mask), so
/// none interrupts a write mid-way.
public struct SignalSet: Sendable {
    private let signals: [Signal]

    public init(_ signals: [Signal]) { self.signals = signals }

    private var set: sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal.rawValue) }
        return set
    }

    /// pthread_sigmask(SIG_BLOCK) on the calling thread, and so on every thread it starts.
    public func blockInEveryThread() {
        var set = self.set
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// sigwait(3): the next of these signals sent to the process.
    public func wait() -> Signal {
        var set = self.set
        var received: Int32 = 0
        sigwait(&set, &received)
        return Signal(rawValue: received)
    }
}

/// The process onair is: its id, its exit, its signals and its children.
public enum ThisProcess {
    public static var id: Int32 { getpid() }

    /// exit(3): flushes stdio and ends the process.
    public static func exit(_ status: Int32) -> Never { Glibc.exit(status) }

    /// The signal is ignored from now on (SIGPIPE: a closed socket is an error return).
    public static func ignore(_ signal: Signal) { Glibc.signal(signal.rawValue, SIG_IGN) }

    /// kill(2). `nil` sends nothing and says whether the process exists.
    @discardableResult
    public static func send(_ signal: Signal?, to process: Int32) -> Bool {
        kill(process, signal?.rawValue ?? 0) == 0
    }

    /// User + system CPU time of the whole process so far (getrusage(2)), in seconds.
    public static var cpuSeconds: Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        return user + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// gethostname(2).
    public static var hostname: String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
        return String(cString: buffer)
    }

    /// sethostname(2): the name the board answers to (systemd-resolved announces it over
    /// mDNS as NAME.local). Root only.
    public static func setHostname(_ name: String) throws {
        let bytes = Array(name.utf8).map { CChar(bitPattern: $0) }
        guard Glibc.sethostname(bytes, bytes.count) == 0 else { throw Errno.current }
    }

    /// sync(2): every file system's dirty data on its medium (before a power-off).
    public static func syncFileSystems() { Glibc.sync() }

    /// Processors online (sysconf(_SC_NPROCESSORS_ONLN)), at least 1.
    public static var processorCount: Int { max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN))) }

    /// The calling thread is niced by `amount` (setpriority(2) on thread id 0 is the
    /// calling thread on Linux): background work yields to the live path.
    public static func lowerThreadPriority(by amount: Int32) {
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, amount)
    }

    /// Whether process `pid` is still there (kill(2) with no signal; EPERM: there, not ours).
    public static func exists(_ pid: Int32) -> Bool {
        pid > 0 && (kill(pid, 0) == 0 || Errno.current == .notPermitted)
    }

    /// Runs `command` with /bin/sh and waits for it: its exit status, or nil when it could
    /// not start or was killed (posix_spawn(3): no fork of a process with threads running).
    @discardableResult
    public static func runShell(_ command: String) -> Int32? {
        var pid = pid_t()
        let arguments: [UnsafeMutablePointer<CChar>?] = ["/bin/sh", "-c", command].map { (argument: String) in strdup(argument) } + [nil]
        defer { for argument in arguments { free(argument) } }
        guard posix_spawn(&pid, "/bin/sh", nil, nil, arguments, environ) == 0 else { return nil }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            if Errno.current != .interrupted { return nil }
        }
        // WIFEXITED / WEXITSTATUS (sys/wait.h): the low 7 bits are the signal, 0 for an exit.
        return status & 0x7f == 0 ? (status >> 8) & 0xff : nil
    }

    /// Runs the program `arguments[0]` (found on PATH) with the rest as its arguments, and
    /// hands `eachLine` every line of its standard output and error as it comes (a pipe,
    /// posix_spawnp(3)); a line longer than 64 KiB comes in pieces. Its exit status, or
    /// nil when it could not start or was killed.
    @discardableResult
    public static func run(_ arguments: [String], eachLine: (String) -> Void) -> Int32? {
        guard !arguments.isEmpty else { return nil }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on 1 and 2; the pipe's own ends close at exec.
        posix_spawn_file_actions_adddup2(&actions, ends[1], 1)
        posix_spawn_file_actions_adddup2(&actions, ends[1], 2)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid = pid_t()
        let started = posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ) == 0
        close(ends[1])
        guard started else { close(ends[0]); return nil }
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        func emit(_ bytes: ArraySlice<UInt8>) {
            if !bytes.isEmpty { eachLine(String(decoding: bytes, as: UTF8.self)) }
        }
        while true {
            let count = read(ends[0], &buffer, buffer.count)
            if count < 0 && Errno.current == .interrupted { continue }
            if count <= 0 { break }
            pending += buffer[0..<count]
            while let end = pending.firstIndex(where: { $0 == 0x0A || $0 == 0x0D }) {
                emit(pending[..<end])
                pending.removeSubrange(...end)
            }
            if pending.count > 65536 { emit(pending[...]); pending = [] }
        }
        emit(pending[...])
        close(ends[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            if Errno.current != .interrupted { return nil }
        }
        return status & 0x7f == 0 ? (status >> 8) & 0xff : nil
    }

    /// getenv(3).
    public static func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
}

/// Standard error, written with one write(2) per call so lines from threads do not mix.
public enum StandardError {
    public static func write(_ text: String) {
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { _ = try? FileDescriptor.standardError.writeAll(UnsafeRawBufferPointer($0)) }
    }

    public static var isTerminal: Bool { FileDescriptor.standardError.isTerminal }
}
