import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a target for a number of cases. With a `crashDirectory`, a case that traps or
/// hangs leaves its input there, written from the signal handler (a hang is an alarm(2)
/// that fires `hangSeconds` into one case), so it can become a regular test case.
public enum FuzzRunner {
    public struct Result: Sendable { public var cases: Int; public var seconds: Double }

    /// The case being run, where a signal handler can write it without allocating.
    nonisolated(unsafe) static var current: (crash: Int32, hang: Int32, buffer: UnsafeMutableRawBufferPointer)?

    public static func run(_ target: FuzzTarget, cases: Int, seed: UInt64, crashDirectory: String? = nil,
                           hangSeconds: UInt32 = 10, progress: (Int) -> Void = { _ in }) -> Result {
        let started = monotonicSeconds()
        target.prepare()
        if let crashDirectory { install(directory: crashDirectory, target: target.name) }
        for number in 0..<cases {
            let input = target.input(case: number, seed: seed)
            if current != nil {
                remember(input)
                alarm(hangSeconds)
            }
            target.run(input)
            if number % 1000 == 999 { progress(number + 1) }
        }
        if current != nil { alarm(0) }
        return Result(cases: cases, seconds: monotonicSeconds() - started)
    }

    static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    static func remember(_ input: [UInt8]) {
        guard let current else { return }
        let count = min(input.count, current.buffer.count - 8)
        current.buffer.storeBytes(of: UInt64(count), as: UInt64.self)
        input.withUnsafeBytes { source in
            UnsafeMutableRawBufferPointer(rebasing: current.buffer[8..<(8 + count)]).copyMemory(from: UnsafeRawBufferPointer(rebasing: source[..<count]))
        }
    }

    static func install(directory: String, target: String) {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let crash = open("\(directory)/\(target)-crash.bin", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        let hang = open("\(directory)/\(target)-hang.bin", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard crash >= 0, hang >= 0 else { return }
        current = (crash, hang, UnsafeMutableRawBufferPointer.allocate(byteCount: 8 << 20, alignment: 8))
        for number in [SIGILL, SIGSEGV, SIGBUS, SIGTRAP, SIGABRT, SIGFPE, SIGALRM] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                if let current = FuzzRunner.current {
                    let length = Int(current.buffer.load(as: UInt64.self))
                    _ = Glibc.write(number == SIGALRM ? current.hang : current.crash, current.buffer.baseAddress! + 8, length)
                    let note = number == SIGALRM ? "fuzz: a case hung; it is saved\n" : "fuzz: a case crashed; it is saved\n"
                    _ = Glibc.write(2, note, note.utf8.count)
                }
                if number == SIGALRM { _exit(3) }
                signal(number, SIG_DFL)
                raise(number)
            }
            sigaction(number, &action, nil)
        }
    }
}
