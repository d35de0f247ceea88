/// What happened, by name (`stream.started`): one constant per kind of event, declared
/// beside the code that emits it (`extension Event { static let … }`), so a listener
/// compares events, never strings, and whether the serial console shows an event is
/// said where the event is declared, not in a list elsewhere.
public struct Event: Hashable, Sendable, CustomStringConvertible {
    /// The logged name: `<subsystem>.<what>`.
    public let name: String
    /// Worth a serial-console line of its own (the operator's view, besides the status line).
    public let onConsole: Bool

    public init(_ name: String, console: Bool = false) {
        self.name = name
        onConsole = console
    }

    public var description: String { name }
}
