import Live
import Media
import RTMP
import System

/// One live RTMP publish: the connection, the protocol session, and the media waiting
/// to go, as FLV tags in RTMP messages. It begins at an IDR (the decoder needs one, and
/// the platform's player), with the stream's metadata and the two sequence headers; its
/// times are milliseconds from that IDR's capture. What the server does not take in time
/// waits in a queue bounded by time: when the oldest waiting message is more than
/// `maximumBehind` older than the newest, everything waiting goes and the stream begins
/// again at the next IDR (the server sees a gap, never a broken picture), and the frames
/// lost are counted.
final class Broadcast {
    let link: Link
    private(set) var session: PublishSession
    /// Messages whole, in order; the first may be partly sent (`sentOfFirst`).
    private var queue: [Outgoing] = []
    private var sentOfFirst = 0
    private var queuedBytes = 0
    /// The capture time of the first IDR sent: the stream's time zero.
    private var base: Int64?
    private var waitingForIDR = true
    private var parameterSets: (sps: [UInt8], pps: [UInt8]) = ([], [])
    private let audio: RealTimeStream.Audio?
    /// When a byte last went (CLOCK_MONOTONIC ns): a server that stops reading is given up.
    private(set) var lastProgress: Int64
    /// When it went live (CLOCK_MONOTONIC ns).
    let began: Int64
    private(set) var bytesSent = 0
    private(set) var framesSent = 0
    /// Pictures not sent: while waiting for an IDR, and those dropped from the queue.
    private(set) var framesDropped = 0

    /// Behind by more than this, what waits is dropped to the next IDR.
    static let maximumBehind: Int64 = 2_000_000_000
    /// And never more than this many bytes wait, whatever their times.
    static let maximumQueued = 16 << 20

    struct Outgoing {
        var bytes: [UInt8]
        /// A picture (counted when dropped), and its capture time.
        var isPicture: Bool
        var captureTime: Int64
    }

    init(link: Link, session: PublishSession, audio: RealTimeStream.Audio?, now: Int64) {
        self.link = link
        self.session = session
        self.audio = audio
        lastProgress = now
        began = now
    }

    var sending: Bool { !queue.isEmpty }

    /// The server's bytes: replies go out with the media; a refusal throws.
    func received(_ bytes: [UInt8]) throws {
        let (reply, _) = try session.received(bytes)
        if !reply.isEmpty { queue.append(Outgoing(bytes: reply, isPicture: false, captureTime: queue.last?.captureTime ?? 0)) }
    }

    /// A picture of the live stream: queued once the stream has begun at an IDR.
    /// Returns how many pictures were dropped to make room (0 mostly).
    @discardableResult
    func picture(_ picture: LivePicture) -> Int {
        let picture = picture.picture
        if waitingForIDR {
            guard picture.isSync, !picture.sps.isEmpty, !picture.pps.isEmpty else {
                if base != nil { framesDropped += 1 }
                return 0
            }
            waitingForIDR = false
        }
        if base == nil {
            base = picture.captureTime
            queue(session.metadata(Self.metadata(sps: picture.sps, audio: audio)), at: picture.captureTime)
            if let audio { queue(session.audio(FLV.audioSequenceHeader(audio.config), timestamp: 0), at: picture.captureTime) }
        }
        if picture.isSync, picture.sps != parameterSets.sps || picture.pps != parameterSets.pps {
            // The first IDR, or a new size (the thermal ladder dropped the top rung).
            parameterSets = (picture.sps, picture.pps)
            queue(session.video(FLV.videoSequenceHeader(sps: picture.sps, pps: picture.pps), timestamp: time(picture.captureTime)), at: picture.captureTime)
        }
        queue(session.video(FLV.videoPicture(picture.accessUnit, isSync: picture.isSync), timestamp: time(picture.captureTime)),
              at: picture.captureTime, picture: true)
        framesSent += 1
        return dropIfBehind()
    }

    /// The live AAC: queued once pictures go (sound before the first picture has no time).
    @discardableResult
    func sound(_ sound: LiveSound) -> Int {
        let sound = sound.sound
        guard let base, !waitingForIDR, sound.captureTime >= base else { return 0 }
        queue(session.audio(FLV.audioFrame(sound.accessUnit), timestamp: time(sound.captureTime)), at: sound.captureTime)
        return dropIfBehind()
    }

    /// The reader's ring overflowed: what it lost cannot be sent, so the stream goes on at
    /// the next IDR.
    func lost() {
        waitingForIDR = true
    }

    /// Writes what the connection takes now.
    func write(now: Int64) throws(LinkError) {
        while let first = queue.first {
            let sent = try link.send(first.bytes[sentOfFirst...])
            guard sent > 0 else { return }
            lastProgress = now
            bytesSent += sent
            sentOfFirst += sent
            if sentOfFirst == first.bytes.count {
                queuedBytes -= first.bytes.count
                queue.removeFirst()
                sentOfFirst = 0
            }
        }
        lastProgress = now
    }

    /// FCUnpublish and deleteStream after what is queued, sent for at most a second: the
    /// platform ends the broadcast at once.
    func end(now: Int64) {
        let rest = queue.first.map { Array($0.bytes[sentOfFirst...]) + queue.dropFirst().flatMap(\.bytes) } ?? []
        queue = []
        link.flush(rest + session.stop(), deadline: now + 1_000_000_000)
        link.close()
    }

    private func time(_ captureTime: Int64) -> UInt32 {
        UInt32(truncatingIfNeeded: max(0, captureTime - (base ?? captureTime)) / 1_000_000)
    }

    private func queue(_ bytes: [UInt8], at captureTime: Int64, picture: Bool = false) {
        if queue.isEmpty { lastProgress = max(lastProgress, KernelClock.monotonic()) }
        queue.append(Outgoing(bytes: bytes, isPicture: picture, captureTime: captureTime))
        queuedBytes += bytes.count
    }

    /// Drops every message not yet begun when the queue is too far behind, and waits for
    /// the next IDR: how many pictures went.
    private func dropIfBehind() -> Int {
        guard let first = queue.first, let last = queue.last,
              last.captureTime - first.captureTime > Self.maximumBehind || queuedBytes > Self.maximumQueued else { return 0 }
        // The message partly sent must finish (the server would read garbage otherwise).
        let keep = sentOfFirst > 0 ? 1 : 0
        let dropped = queue[keep...].filter(\.isPicture).count
        queuedBytes = queue.prefix(keep).reduce(0) { $0 + $1.bytes.count }
        queue.removeSubrange(keep...)
        framesDropped += dropped
        framesSent -= dropped
        waitingForIDR = true
        return dropped
    }

    /// @setDataFrame onMetaData: what players and platforms show of the stream.
    static func metadata(sps: [UInt8], audio: RealTimeStream.Audio?) -> [(String, AMF0Value)] {
        var fields: [(String, AMF0Value)] = []
        if let parsed = try? H264SPS(nal: sps[...]) {
            fields += [("width", .number(Double(parsed.width))), ("height", .number(Double(parsed.height)))]
        }
        fields.append(("videocodecid", .number(7)))
        if let audio {
            fields += [("audiocodecid", .number(10)), ("audiosamplerate", .number(Double(audio.sampleRate))),
                       ("audiosamplesize", .number(16)), ("stereo", .boolean(audio.channels > 1))]
        }
        fields.append(("encoder", .string("onair")))
        return fields
    }
}
