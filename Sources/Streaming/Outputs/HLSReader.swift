import Live
import Threading

/// The HLS packager (`HLSSink`) as a complete reader of the live feed, on a thread of its
/// own (`onair-hls`): the live encoders publish and go on, and the packager cuts and
/// writes behind them, so a card that stalls a write holds the encoders only once the
/// reader's ring (`capacity` items, about 4 s of a three-rung ladder) is full. It ends at
/// the stream's end (ENDLIST written, then the feed is told, and the live output's
/// `finish` returns), at its first failure (the feed throws it to the encoders' next
/// publish, which fails the stream as a write on their thread did), or when the stream
/// is given up.
final class HLSReader {
    static let capacity = 512
    private let reader: LiveReader
    private let feed: LiveFeed
    private let thread: WorkerThread

    /// Joins `feed` before anything of the stream is published.
    init(_ sink: HLSSink, feed: LiveFeed) {
        let reader = feed.join("hls", wants: .complete, capacity: Self.capacity, wake: {})
        self.reader = reader
        self.feed = feed
        thread = WorkerThread(name: "onair-hls") { Self.run(sink, reader: reader, feed: feed) }
    }

    /// A stream dropped without its end (its encoders failed): the reader takes nothing
    /// more and its thread ends.
    deinit {
        feed.leave(reader)
        thread.join()
    }

    private static func run(_ sink: HLSSink, reader: LiveReader, feed: LiveFeed) {
        do {
            while let items = reader.next() {
                for case .encoded(let item) in items {
                    switch item {
                    case .video(let sample): try sink.append(video: sample)
                    case .audio(let sample): try sink.append(audio: sample)
                    case .change(let change): try sink.discontinuity(change)
                    case .end(let totals):
                        try sink.finish(totals)
                        feed.finished(reader, failure: nil)
                        return
                    }
                }
            }
        } catch {
            feed.finished(reader, failure: error)
        }
    }
}
