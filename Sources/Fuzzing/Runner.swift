import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a target for a number of cases. With a `crashDirectory`, a case that traps or
/// hangs leaves its input there, written from the signal handler (a hang is an alarm(2)
/// that fires `hangSeconds` into one case), so it can become a regular test case.
public enum FuzzRunner {
    public struct Result: Sendable {
        public var cases: Int
        public var seconds: Double
        /// The cases over the time budget (twice in a row), by number.
        public var slow: [Int] = []
    }

    /// What one case of an in-process target may cost. Inputs are at most some 64 KiB and
    /// every reader is linear in its input, so an honest case costs milliseconds even in
    /// a debug build; a super-linear one (issue 44's WHEP offer: 10 s in release) costs
    /// seconds. A case over the budget is run again and counts only if it is over again,
    /// so a pause of a loaded machine is not taken for one.
    public static let budgetSeconds = 1.0

    /// The case being run, where a signal handler can write it without allocating.
    nonisolated(unsafe) static var current: (crash: Int32, hang: Int32, buffer: UnsafeMutableRawBufferPointer)?

    /// `budget`: the seconds one case may take (nil: no budget, for targets that make a
    /// round trip to a server).
    public static func run(_ target: FuzzTarget, cases: Int, seed: UInt64, crashDirectory: String? = nil,
                           hangSeconds: UInt32 = 10, budget: Double? = budgetSeconds, progress: (Int) -> Void = { _ in }) -> Result {
        let started = monotonicSeconds()
        var slow: [Int] = []
        target.prepare()
        if let crashDirectory { install(directory: crashDirectory, target: target.name) }
        for number in 0..<cases {
            let input = target.input(case: number, seed: seed)
            if current != nil {
                remember(input)
                alarm(hangSeconds)
            }
            if let budget {
                if !withinBudget(target, input, seconds: budget) {
                    slow.append(number)
                    if let crashDirectory { save(input, to: "\(crashDirectory)/\(target.name)-slow-\(number).bin") }
                }
            } else {
                target.run(input)
            }
            if number % 1000 == 999 { progress(number + 1) }
        }
        if current != nil { alarm(0) }
        return Result(cases: cases, seconds: monotonicSeconds() - started, slow: slow)
    }

    /// Runs `input`; false if it took longer than `seconds` twice in a row.
    public static func withinBudget(_ target: FuzzTarget, _ input: [UInt8], seconds: Double) -> Bool {
        for _ in 0..<2 {
            let started = monotonicSeconds()
            target.run(input)
            if monotonicSeconds() - started <= seconds { return true }
        }
        return false
    }

    static func save(_ input: [UInt8], to path: String) {
        FileManager.default.createFile(atPath: path, contents: Data(input))
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
        // A run after another: the files are the new target's, the buffer is kept.
        if let previous = current {
            close(previous.crash)
            close(previous.hang)
        }
        current = (crash, hang, current?.buffer ?? UnsafeMutableRawBufferPointer.allocate(byteCount: 8 << 20, alignment: 8))
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
