import Devices
import Media
#if canImport(Glibc)
import Glibc
#endif

/// The bounded hand-off from capture threads to the media thread. Never an unbounded
/// backlog: in real time a full queue drops the oldest video frame (newest wins, audio is
/// kept since it is small and a gap in it is audible); with `--pace fast` the producer
/// waits instead, so a benchmark measures work rather than drops.
public final class MediaQueue: CaptureSink, @unchecked Sendable {
    public enum Item: Sendable {
        case video(VideoFrame)
        case audio(AudioChunk)
    }
    public enum Policy: Sendable { case dropOldestVideo, block }

    public let capacity: Int
    public let policy: Policy
    private var items: [Item] = []
    private var head = 0
    private var closed = false
    private var mutex = pthread_mutex_t()
    private var notEmpty = pthread_cond_t()
    private var notFull = pthread_cond_t()
    public private(set) var droppedVideoFrames = 0

    public init(capacity: Int, policy: Policy) {
        self.capacity = capacity
        self.policy = policy
        pthread_mutex_init(&mutex, nil)
        pthread_cond_init(&notEmpty, nil)
        pthread_cond_init(&notFull, nil)
    }

    deinit {
        pthread_mutex_destroy(&mutex)
        pthread_cond_destroy(&notEmpty)
        pthread_cond_destroy(&notFull)
    }

    private var count: Int { items.count - head }

    public func capture(_ frame: VideoFrame) { push(.video(frame)) }
    public func capture(_ chunk: AudioChunk) { push(.audio(chunk)) }

    public func push(_ item: Item) {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        if closed { return }
        if count >= capacity {
            switch policy {
            case .block:
                while count >= capacity && !closed { pthread_cond_wait(&notFull, &mutex) }
                if closed { return }
            case .dropOldestVideo:
                if let index = items[head...].firstIndex(where: { if case .video = $0 { return true } else { return false } }) {
                    items.remove(at: index)
                    droppedVideoFrames += 1
                }
            }
        }
        items.append(item)
        pthread_cond_signal(&notEmpty)
    }

    /// The next item, or nil once the queue is closed and empty.
    public func pop() -> Item? {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        while count == 0 && !closed { pthread_cond_wait(&notEmpty, &mutex) }
        guard count > 0 else { return nil }
        let item = items[head]
        head += 1
        if head > 64 && head * 2 > items.count { items.removeFirst(head); head = 0 }
        pthread_cond_signal(&notFull)
        return item
    }

    /// Wakes everyone; pushes are ignored from now on, pops drain what is left.
    public func close() {
        pthread_mutex_lock(&mutex)
        closed = true
        pthread_cond_broadcast(&notEmpty)
        pthread_cond_broadcast(&notFull)
        pthread_mutex_unlock(&mutex)
    }

    public var dropped: Int {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return droppedVideoFrames
    }
}
