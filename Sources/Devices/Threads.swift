#if canImport(Glibc)
import Glibc
#endif

/// A pthread mutex; Foundation-free so the device layer stays small.
public final class NSLockish: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    public init() { pthread_mutex_init(&mutex, nil) }
    deinit { pthread_mutex_destroy(&mutex) }
    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return try body()
    }
}

/// A joinable thread for the media plane (capture, encode), which must not share
/// the cooperative pool with the control plane.
public final class ThreadHandle: @unchecked Sendable {
    /// What the thread is for, for debuggers and logs.
    public let name: String
    private var thread = pthread_t()
    private final class Box { let body: () -> Void; init(_ body: @escaping () -> Void) { self.body = body } }

    public init(name: String, _ body: @escaping () -> Void) {
        self.name = name
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let result = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            box.body()
            return nil
        }, box)
        precondition(result == 0, "pthread_create failed: \(result)")
    }

    public func join() { pthread_join(thread, nil) }
}
