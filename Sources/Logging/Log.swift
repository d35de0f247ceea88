import Basics
import System
import Threading

/// One event a line: logfmt (`t_ms=212.4 level=info event=segment.stored seq=3`) for
/// people and the serial console, or JSON lines for machines. `t_ms` counts from process
/// start on CLOCK_MONOTONIC (before the Swift runtime, the config and this logger; only exec
/// and the loader come before it). Thread-safe: media and control threads both log.
public final class Log: Sendable {
    public enum Level: String, Sendable { case debug, info, warn, error }
    /// `log.format`: logfmt for people and the serial console, JSON lines for machines.
    public enum Format: String, Sendable, CaseIterable { case logfmt, json }

    public let format: Format
    private let origin: Int64
    private let clock = MonotonicClock()
    /// Told of every event after it is written (the console, the last error); the lock
    /// also keeps two threads' lines whole.
    private let listeners = Locked<[@Sendable (Event, Level, [(String, Any)]) -> Void]>([])
    private let write: @Sendable (String) -> Void

    public init(format: Format, origin: Int64? = nil,
                write: @escaping @Sendable (String) -> Void = Log.standardError) {
        self.format = format
        self.origin = origin ?? MonotonicClock.processStart
        self.write = write
    }

    /// A log that writes nothing; `listener` (tests) still hears every event.
    public static func silent(_ listener: (@Sendable (Event, Level, [(String, Any)]) -> Void)? = nil) -> Log {
        let log = Log(format: .logfmt, write: { _ in })
        if let listener { log.listen(listener) }
        return log
    }

    public func callAsFunction(_ event: Event, level: Level = .info, _ fields: (String, Any)...) {
        emit(event, level: level, fields)
    }

    public func listen(_ listener: @escaping @Sendable (Event, Level, [(String, Any)]) -> Void) {
        listeners.withLock { $0.append(listener) }
    }

    /// Milliseconds since process start (the `t_ms` of a line logged now), to 0.1 ms.
    public var elapsedMilliseconds: Double { Double((clock.now() - origin) / 100_000) / 10 }

    public func emit(_ event: Event, level: Level, _ fields: [(String, Any)]) {
        defer { for listener in listeners.withLock({ $0 }) { listener(event, level, fields) } }
        let elapsed = elapsedMilliseconds
        let all: [(String, Any)] = [("t_ms", elapsed), ("level", level.rawValue), ("event", event.name)] + fields
        let line: String
        switch format {
        case .logfmt:
            line = all.map { "\($0.0)=\(Self.logfmtValue($0.1))" }.joined(separator: " ")
        case .json:
            line = "{" + all.map { "\"\($0.0)\":\(Self.jsonValue($0.1))" }.joined(separator: ",") + "}"
        }
        listeners.withLock { [write] _ in write(line + "\n") }
    }

    /// Writes a line to standard error with one write(2), so lines never interleave.
    public static let standardError: @Sendable (String) -> Void = { line in
        StandardError.write(line)
    }

    public static func logfmtValue(_ value: Any) -> String {
        let text = "\(value)"
        if text.isEmpty || text.contains(where: { $0 == " " || $0 == "=" || $0 == "\"" || $0 == "\n" }) {
            return "\"" + text.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"")
                .replacing("\n", with: "\\n") + "\""
        }
        return text
    }

    static func jsonValue(_ value: Any) -> String {
        switch value {
        case let n as Int: return String(n)
        case let n as Int64: return String(n)
        case let n as Double: return n.isFinite ? String(n) : "null"
        case let b as Bool: return b ? "true" : "false"
        default: return JSON.quote("\(value)")
        }
    }
}
