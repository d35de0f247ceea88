import Logging
import Synchronization

/// The names of the events a log was told, in order.
public final class EventNames: Sendable {
    private let list = Mutex<[String]>([])

    public init() {}

    public var names: [String] { list.withLock { $0 } }
    public func add(_ name: String) { list.withLock { $0.append(name) } }
    /// A log that writes nothing and records each event's name here.
    public var log: Log { .silent { [self] event, _, _ in add(event.name) } }
}
