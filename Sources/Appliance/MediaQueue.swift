import Devices
import Media
#if canImport(Glibc)
import Glibc
#endif

/// The bounded hand-off from capture threads to the media thread. Video and audio have
/// bounds of their own, so a burst of one never evicts the other. Never an unbounded
/// backlog: in real time a full queue drops the oldest item of that kind (newest wins) and
/// counts it; with `--pace fast` the producer waits instead, so a benchmark measures work
/// rather than drops.
public final class MediaQueue: CaptureSink, @unchecked Sendable {
    public enum Item: Sendable {
        case video(VideoFrame)
        case audio(AudioChunk)
    }
    public enum Policy: Sendable { case dropOldest, block }

    public let videoCapacity: Int
    public let audioCapacity: Int
    public let policy: Policy
    private var items: [Item] = []
    private var head = 0
    private var closed = false
    private var videoCount = 0
    private var audioCount = 0
    private var mutex = pthread_mutex_t()
    private var notEmpty = pthread_cond_t()
    private var notFull = pthread_cond_t()
    private var droppedVideo = 0
    private var droppedAudio = 0

    public init(videoCapacity: Int, audioCapacity: Int, policy: Policy) {
        precondition(videoCapacity > 0 && audioCapacity > 0)
        self.videoCapacity = videoCapacity
        self.audioCapacity = audioCapacity
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

    private static func isVideo(_ item: Item) -> Bool {
        if case .video = item { return true } else { return false }
    }

    public func push(_ item: Item) {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        let video = Self.isVideo(item)
        func full() -> Bool { video ? videoCount >= videoCapacity : audioCount >= audioCapacity }
        if closed { return }
        if full() {
            switch policy {
            case .block:
                while full() && !closed { pthread_cond_wait(&notFull, &mutex) }
                if closed { return }
            case .dropOldest:
                if let index = items[head...].firstIndex(where: { Self.isVideo($0) == video }) {
                    items.remove(at: index)
                    if video { videoCount -= 1; droppedVideo += 1 } else { audioCount -= 1; droppedAudio += 1 }
                }
            }
        }
        items.append(item)
        if video { videoCount += 1 } else { audioCount += 1 }
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
        if Self.isVideo(item) { videoCount -= 1 } else { audioCount -= 1 }
        if head > 64 && head * 2 > items.count { items.removeFirst(head); head = 0 }
        pthread_cond_broadcast(&notFull)
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

    /// Items dropped so far because the media thread fell behind.
    public var dropped: (video: Int, audio: Int) {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return (droppedVideo, droppedAudio)
    }
}
