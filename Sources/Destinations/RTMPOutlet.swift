import Live
import Media
import RTMP
import System

/// One live RTMP publish: the connection (TCP, or TLS for rtmps://), the protocol session,
/// and the stream as FLV tags in RTMP messages — from an IDR, with the stream's metadata
/// and the two sequence headers first (again when the parameter sets change), timed in
/// milliseconds from that IDR's capture.
final class RTMPOutlet: Outlet {
    let link: Link
    private var session: PublishSession
    private(set) var sending: Sending
    private var parameterSets: (sps: [UInt8], pps: [UInt8]) = ([], [])
    private let audio: RealTimeStream.Audio?

    /// A connection that has not gone live by then is given up.
    static let connectNanoseconds: Int64 = 10_000_000_000

    private init(link: Link, session: PublishSession, audio: RealTimeStream.Audio?, now: Int64) {
        self.link = link
        self.session = session
        self.audio = audio
        sending = Sending(now: now)
    }

    /// Connects, shakes hands and publishes `key` within `connectNanoseconds`: an outlet
    /// live on the server, or the reason it is not. `wake` and `stopped` end it early.
    static func open(url: RTMPURL, key: String, stream: RealTimeStream, wake: WakePipe, stopped: () -> Bool) throws -> RTMPOutlet {
        let deadline = KernelClock.monotonic() + connectNanoseconds
        let link = try Link.open(host: url.host, port: url.port, secure: url.secure, deadline: deadline, wake: wake, stopped: stopped)
        var session = PublishSession(url: url, key: key)
        var random = [UInt8](repeating: 0, count: 1528)
        for index in random.indices { random[index] = UInt8.random(in: 0...255) }
        link.flush(session.start(time: 0, random: random), deadline: deadline)
        while true {
            if stopped() { throw LinkError.stopped }
            let now = KernelClock.monotonic()
            guard now < deadline else { throw LinkError.failed("the server did not take the stream within \(connectNanoseconds / 1_000_000_000) s") }
            _ = try? Poll.wait([(link.socket, link.events(sending: false)), (wake.read, .readable)],
                               timeoutMs: Int32(min(1000, (deadline - now) / 1_000_000 + 1)))
            wake.drain()
            let bytes: [UInt8]
            let publishing = session.state == .publishing
            do { bytes = try link.receive() } catch {
                // What YouTube, Twitch and nginx-rtmp's on_publish do with a key they refuse.
                guard publishing, case .failed(let text) = error else { throw error }
                throw LinkError.failed(text + " when asked to publish: is the stream key right?")
            }
            guard !bytes.isEmpty else { continue }
            let (reply, events): ([UInt8], [PublishSession.Event])
            do { (reply, events) = try session.received(bytes) } catch { throw LinkError.failed("\(error)") }
            link.flush(reply, deadline: deadline)
            if events.contains(.live) { break }
        }
        return RTMPOutlet(link: link, session: session, audio: stream.audio, now: KernelClock.monotonic())
    }

    func picture(_ picture: LivePicture) -> Int {
        let picture = picture.picture
        let first = sending.gate.base == nil
        guard sending.gate.admit(picture) else { return 0 }
        if first {
            sending.append(session.metadata(Self.metadata(sps: picture.sps, audio: audio)), at: picture.captureTime)
            if let audio { sending.append(session.audio(FLV.audioSequenceHeader(audio.config), timestamp: 0), at: picture.captureTime) }
        }
        let time = milliseconds(picture.captureTime)
        if picture.isSync, picture.sps != parameterSets.sps || picture.pps != parameterSets.pps {
            // The first IDR, or a new size (the thermal ladder dropped the top rung).
            parameterSets = (picture.sps, picture.pps)
            sending.append(session.video(FLV.videoSequenceHeader(sps: picture.sps, pps: picture.pps), timestamp: time), at: picture.captureTime)
        }
        sending.append(session.video(FLV.videoPicture(picture.accessUnit, isSync: picture.isSync), timestamp: time),
                       at: picture.captureTime, picture: true)
        return sending.dropIfBehind()
    }

    func sound(_ sound: LiveSound) -> Int {
        let sound = sound.sound
        guard sending.gate.admit(sound: sound.captureTime) else { return 0 }
        sending.append(session.audio(FLV.audioFrame(sound.accessUnit), timestamp: milliseconds(sound.captureTime)), at: sound.captureTime)
        return sending.dropIfBehind()
    }

    func lost() { sending.gate.lost() }

    func wait(timeoutMs: Int32, wake: WakePipe) -> Bool {
        let ready = (try? Poll.wait([(wake.read, .readable), (link.socket, link.events(sending: !sending.queue.isEmpty))], timeoutMs: timeoutMs)) ?? []
        wake.drain()
        return ready.count > 1 && !ready[1].isEmpty
    }

    func turn(now: Int64, readable: Bool) throws {
        if readable {
            var bytes = try link.receive()
            while !bytes.isEmpty {
                // Replies (acknowledgements, pings) go after the media already queued.
                let (reply, _) = try session.received(bytes)
                sending.append(reply, at: sending.queue.lastCaptureTime)
                bytes = try link.receive()
            }
        }
        try sending.write(now: now) { try link.send($0) }
    }

    /// FCUnpublish and deleteStream after what is queued: the platform ends the broadcast
    /// at once.
    func end(now: Int64) {
        link.flush(sending.queue.takeAll() + session.stop(), deadline: now + 1_000_000_000)
        link.close()
    }

    func close() { link.close() }

    private func milliseconds(_ captureTime: Int64) -> UInt32 {
        UInt32(truncatingIfNeeded: sending.gate.elapsed(captureTime) / 1_000_000)
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
