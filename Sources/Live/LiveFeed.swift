import Logging
import Media
import RTP
import Threading

/// The live stream, published once by the live output and read by every output that joins
/// it at run time (the HLS packager, WebRTC's viewers, RTSP's clients, a destination): each
/// rung's pictures to the readers of that rung (the top, unless a reader asks for a lower
/// one), the AAC, and the microphone's sound for readers that encode it
/// themselves, in real time; and for complete readers (the HLS packager) every encoded
/// sample of every rung, the stream's changes and its end, never lost.
/// What it is now (the stream, its parameter sets, the microphone's format) can be asked
/// at any time; what it publishes goes to each reader's own ring (`LiveReader`). Nothing is
/// made for nobody: RTP payloads only while a reader wants them, Opus only while a reader
/// wants it, on a thread of its own (`OpusWorker`). Publishing to real-time readers
/// returns at once, whatever they do; a complete reader's full ring holds the publisher
/// until it takes (its ring is its bound).
public final class LiveFeed: Sendable {
    /// What the feed is now.
    public struct Now: Sendable {
        /// The stream being published; nil between streams.
        public var stream: RealTimeStream?
        /// The parameter sets of its last IDR (empty before its first).
        public var sps: [UInt8] = []
        public var pps: [UInt8] = []
        /// The microphone's sound as it last came (rate and channels), whether or not it
        /// is encoded as Opus.
        public var microphone: (rate: Int, channels: Int)?
    }

    /// Payloads of at most this many bytes, for every RTP reader: within any path's MTU
    /// with IP, UDP, RTP, SRTP and an RTP extension (RFC 8834 §4.5 for WebRTC; RTSP's UDP
    /// and interleaved TCP take them as well).
    public static let maximumPayload = 1200

    private let state = Locked(State())
    private let packetizer = H264Packetizer(maximumPayload: LiveFeed.maximumPayload)
    private let aac = AACPacketizer(maximumPayload: LiveFeed.maximumPayload)
    private let opus: OpusWorker

    struct State: Sendable {
        var now = Now()
        var readers: [LiveReader] = []
        /// Every reader's wants: what to make at all.
        var wanted: LiveReader.Wants = []
        /// What a complete reader failed with, until the publisher is told.
        var failure: (any Error)?
    }

    /// `audioBitrate`: Opus's (the live AAC's `audio.bitrate`).
    public init(audioBitrate: Int = 64_000, log: Log) {
        opus = OpusWorker(bitrate: audioBitrate, log: log)
        opus.deliver { [weak self] packets in self?.distribute(opus: packets) }
    }

    public func stop() { opus.stop() }

    deinit { opus.stop() }

    public var now: Now { state.withLock { $0.now } }

    /// Asks the live encoder for an IDR soon (a reader joined, or one of its viewers lost
    /// a picture); nothing between streams.
    public func askForPicture() { state.withLock { $0.now.stream?.askForPicture }?() }

    // MARK: Readers (any thread)

    /// A reader from the next item published on: `capacity` items are held for it, and
    /// `wake` is called (on the publishing thread, which it must not hold) when some are.
    /// `rung`: the quality ladder's rung whose pictures it takes (a destination may ask for
    /// a lower one than the top).
    public func join(_ name: String, wants: LiveReader.Wants, rung: Int = 0, capacity: Int,
                     wake: @escaping @Sendable () -> Void) -> LiveReader {
        let reader = LiveReader(name: name, wants: wants, rung: rung, capacity: capacity, wake: wake)
        changeReaders { $0.append(reader) }
        return reader
    }

    /// The reader takes nothing more (a publisher waiting for its room goes on).
    public func leave(_ reader: LiveReader) {
        changeReaders { $0.removeAll { $0 === reader } }
        reader.close()
    }

    /// What `reader` takes from now on.
    public func update(_ reader: LiveReader, wants: LiveReader.Wants) {
        reader.set(wants: wants)
        changeReaders { _ in }
    }

    /// Changes the readers and what the feed makes for them, in one lock: two threads
    /// joining and leaving at once must not leave Opus off while a reader wants it.
    private func changeReaders(_ change: (inout [LiveReader]) -> Void) {
        state.withLock { state in
            change(&state.readers)
            state.wanted = state.readers.reduce(into: []) { $0.formUnion($1.wants) }
            opus.set(wanted: state.wanted.contains(.opus))
        }
    }

    /// The readers joined now, and what each lost to overflow.
    public var readers: [(name: String, discarded: Int)] { state.withLock { $0.readers }.map { ($0.name, $0.discarded) } }

    var opusStarted: Bool { opus.started }
    var opusQueued: Int { opus.queued }

    // MARK: Publishing (the live output's thread)

    /// A stream began: what follows is `stream`'s.
    public func begin(_ stream: RealTimeStream) {
        state.withLock { state in
            state.now = Now(stream: stream, microphone: state.now.microphone)
            state.failure = nil
        }
        distribute(.began(stream), kind: .streams)
    }

    /// The stream ended (ENDLIST), or was given up: nothing comes until the next `begin`.
    /// (A complete reader of a stream given up is left by its owner: `leave`.)
    public func end(stream id: String) {
        let ended = state.withLock { state -> Bool in
            guard state.now.stream?.id == id else { return false }
            state.now.stream = nil
            return true
        }
        if ended { distribute(.ended(id), kind: .streams) }
    }

    // MARK: Complete readers (the HLS packager)

    /// An encoded sample, or a change, to every complete reader, waiting while one's ring
    /// is full. Throws what a complete reader failed with (once): the stream cannot go on
    /// without it.
    public func publish(encoded item: EncodedItem) throws {
        for reader in completeReaders { _ = reader.offer(.encoded(item), kind: .complete) }
        try throwFailure()
    }

    /// The stream's end to every complete reader; returns when each has said it is done,
    /// throwing what one failed with.
    public func finish(_ totals: StreamTotals) throws {
        let readers = completeReaders
        for reader in readers { _ = reader.offer(.encoded(.end(totals)), kind: .complete) }
        for reader in readers { reader.waitUntilDone() }
        try throwFailure()
    }

    /// A complete reader is done — its stream's end is written, or `failure` ended its work
    /// (the publisher's next call throws it) — and leaves the feed.
    public func finished(_ reader: LiveReader, failure: (any Error)?) {
        state.withLock { state in
            if let failure, state.failure == nil { state.failure = failure }
        }
        reader.close(done: true)
        leave(reader)
    }

    private var completeReaders: [LiveReader] { state.withLock { $0.readers.filter { $0.wants.contains(.complete) } } }

    private func throwFailure() throws {
        let failure = state.withLock { state -> (any Error)? in
            defer { state.failure = nil }
            return state.failure
        }
        if let failure { throw failure }
    }

    /// A picture of one rung, to the readers of that rung (`RealTimePicture.isFor`); the
    /// highest rung encoded is the stream's now (its parameter sets are `now`'s).
    public func publish(_ picture: RealTimePicture) {
        let readers = state.withLock { state -> [LiveReader] in
            if picture.isSync, picture.rung == picture.topRung, state.now.stream != nil, !picture.sps.isEmpty, !picture.pps.isEmpty {
                state.now.sps = picture.sps
                state.now.pps = picture.pps
            }
            guard state.wanted.contains(.pictures) else { return [] }
            return state.readers.filter { picture.isFor(rung: $0.rung) }
        }
        guard !readers.isEmpty else { return }
        var payloads: [[UInt8]] = []
        if readers.contains(where: { $0.wants.isSuperset(of: [.pictures, .rtp]) }) {
            guard let units = try? H264.splitLengthPrefixed(picture.accessUnit) else { return }
            payloads = packetizer.payloads(units, parameterSets: picture.isSync ? [picture.sps, picture.pps] : [])
        }
        distribute(.picture(LivePicture(picture: picture, payloads: payloads, rtpTimestamp: RTPClock.video(picture.captureTime))),
                   kind: .pictures, to: readers)
    }

    /// The live stream's AAC as encoded.
    public func publish(_ sound: RealTimeSound) {
        let (wanted, rate) = state.withLock { ($0.wanted, $0.now.stream?.audio?.sampleRate) }
        guard wanted.contains(.aac), let rate else { return }
        let payloads = wanted.contains(.rtp) ? aac.payloads(sound.accessUnit) : []
        distribute(.sound(LiveSound(sound: sound, payloads: payloads, rtpTimestamp: RTPClock.timestamp(sound.captureTime, rate: Int64(rate)))),
                   kind: .aac)
    }

    /// The microphone's sound as captured: handed to the Opus thread while a reader wants
    /// Opus (the call returns at once).
    public func publish(captured chunk: AudioChunk) {
        let wanted = state.withLock { state -> Bool in
            state.now.microphone = (chunk.sampleRate, chunk.channels)
            return state.wanted.contains(.opus)
        }
        if wanted { opus.encode(chunk) }
    }

    private func distribute(opus packets: [OpusPacket]) {
        for packet in packets { distribute(.opus(packet), kind: .opus) }
    }

    private func distribute(_ item: LiveItem, kind: LiveReader.Wants, to readers: [LiveReader]? = nil) {
        for reader in readers ?? state.withLock({ $0.readers }) where reader.offer(item, kind: kind) { reader.wake() }
    }
}
