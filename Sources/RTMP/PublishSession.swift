/// A publisher's side of one RTMP connection, without I/O: the bytes to send and what the
/// server's bytes mean. The connection (TCP, or TLS for rtmps) belongs to whoever drives
/// it; this is the protocol (RTMP specification 1.0 §5, §7), in the order FFmpeg and OBS
/// publish to YouTube, Twitch, Facebook and nginx-rtmp:
///
///   C0 C1 → S0 S1 S2 → C2, Set Chunk Size, connect → _result
///   → releaseStream, FCPublish, createStream → _result (the stream id)
///   → publish(key, "live") → onStatus NetStream.Publish.Start: live
///   … @setDataFrame onMetaData, the sequence headers, pictures and sound …
///   FCUnpublish, deleteStream (the platform ends the broadcast at once).
///
/// The stream key is sent only in releaseStream, FCPublish, publish and FCUnpublish, and
/// never appears in an error or an event.
public struct PublishSession: Sendable {
    public enum Event: Equatable, Sendable {
        /// The server took the publish: media may follow (`metadata`, `video`, `audio`).
        case live
    }

    public enum State: Equatable, Sendable {
        case handshake, connecting, creatingStream, publishing, live, closed
    }

    public let url: RTMPURL
    private let key: String
    public private(set) var state = State.handshake
    /// The message stream the server created for the publish.
    public private(set) var streamID: UInt32 = 0
    private var writer = ChunkWriter()
    private var reader = ChunkReader()
    private var handshake: [UInt8] = []
    private var c1: [UInt8] = []
    /// The server's window (§5.4.4): an Acknowledgement once that many more bytes came.
    private var window: UInt64 = 2_500_000
    private var acknowledged: UInt64 = 0

    static let handshakeSize = 1536
    /// The chunk size onair writes with: a picture in a few chunks, not hundreds.
    static let chunkSize = 4096
    // Chunk streams: control 2 (§5.3.1.1); then commands, sound, pictures, metadata.
    static let commandChunks = 3, audioChunks = 4, videoChunks = 6, dataChunks = 5
    enum Transaction: Double { case connect = 1, releaseStream, fcPublish, createStream, publish, fcUnpublish, deleteStream }

    public init(url: RTMPURL, key: String) {
        self.url = url
        self.key = key
    }

    /// C0 (version 3) and C1 (§5.2.2, §5.2.3): its time, four zero bytes, then 1528
    /// bytes of `random` (the server echoes C1 in S2).
    public mutating func start(time: UInt32, random: [UInt8]) -> [UInt8] {
        var c1 = [UInt8(time >> 24), UInt8((time >> 16) & 0xFF), UInt8((time >> 8) & 0xFF), UInt8(time & 0xFF), 0, 0, 0, 0]
        c1 += random.prefix(Self.handshakeSize - 8)
        c1 += [UInt8](repeating: 0, count: Self.handshakeSize - c1.count)
        self.c1 = c1
        return [3] + c1
    }

    /// What the server sent: the bytes to send back, and what happened. Throws when the
    /// server refused (its words) or broke the protocol; the connection is then done.
    public mutating func received(_ bytes: [UInt8]) throws -> (send: [UInt8], events: [Event]) {
        guard state != .closed else { return ([], []) }
        var send: [UInt8] = []
        var events: [Event] = []
        var bytes = bytes
        if state == .handshake {
            let needed = 1 + 2 * Self.handshakeSize - handshake.count
            handshake += bytes.prefix(needed)
            bytes = Array(bytes.dropFirst(needed))
            guard handshake.count == 1 + 2 * Self.handshakeSize else { return ([], []) }
            guard handshake[0] == 3 else { throw RTMPError.malformed("the server speaks RTMP version \(handshake[0]), not 3") }
            // C2 echoes S1 (§5.2.4); S2 echoed our C1 (not checked: servers fill it variously).
            send += handshake[1...Self.handshakeSize]
            send += writer.setChunkSize(Self.chunkSize)
            send += command("connect", .connect, [.object([
                ("app", .string(url.app)), ("type", .string("nonprivate")), ("flashVer", .string("FMLE/3.0 (compatible; onair)")),
                ("tcUrl", .string(url.tcURL)),
            ])])
            state = .connecting
        }
        for message in try reader.feed(bytes) {
            let (reply, event) = try handle(message)
            send += reply
            if let event { events.append(event) }
        }
        if reader.received - acknowledged >= window {
            acknowledged = reader.received
            send += writer.chunks(RTMPMessage(type: RTMPMessage.acknowledgement, payload: Self.u32(UInt32(truncatingIfNeeded: acknowledged))),
                                  chunkStream: 2)
        }
        return (send, events)
    }

    private mutating func handle(_ message: RTMPMessage) throws -> (send: [UInt8], event: Event?) {
        switch message.type {
        case RTMPMessage.windowAcknowledgementSize where message.payload.count >= 4:
            window = UInt64(max(1, Self.u32(message.payload)))
            return ([], nil)
        case RTMPMessage.userControl where message.payload.count >= 6 && message.payload[0] == 0 && message.payload[1] == 6:
            // Ping Request → Ping Response with its timestamp (§7.1.7).
            return (writer.chunks(RTMPMessage(type: RTMPMessage.userControl, payload: [0, 7] + message.payload[2..<6]), chunkStream: 2), nil)
        case RTMPMessage.commandAMF0:
            return try command(AMF0.decode(message.payload))
        default:
            return ([], nil)
        }
    }

    private mutating func command(_ values: [AMF0Value]) throws -> (send: [UInt8], event: Event?) {
        guard let name = values.first?.string else { return ([], nil) }
        let transaction = values.count > 1 ? values[1].number.flatMap { Transaction(rawValue: $0) } : nil
        let info = values.count > 3 ? values[3] : nil
        switch (name, transaction) {
        case ("_result", .connect?):
            state = .creatingStream
            return (command("releaseStream", .releaseStream, [.string(key)]) + command("FCPublish", .fcPublish, [.string(key)])
                    + command("createStream", .createStream, []), nil)
        case ("_result", .createStream?):
            guard let id = info?.number, id >= 0, id < 0x1_0000_0000, id == id.rounded() else {
                throw RTMPError.malformed("createStream's answer has no stream id")
            }
            streamID = UInt32(id)
            state = .publishing
            return (command("publish", .publish, [.string(key), .string("live")], streamID: streamID), nil)
        case ("_error", .connect?), ("_error", .createStream?):
            throw RTMPError.refused("the server refused \(transaction == .connect ? "connect" : "createStream"): \(words(info))")
        case ("onStatus", _):
            let code = info?["code"]?.string ?? ""
            if code == "NetStream.Publish.Start" {
                guard state == .publishing else { return ([], nil) }
                state = .live
                return ([], .live)
            }
            if info?["level"]?.string == "error" || code.hasSuffix(".BadName") || code.hasSuffix(".Failed") || code.hasSuffix(".Rejected") {
                throw RTMPError.refused("the server refused the stream: \(words(info))")
            }
            return ([], nil)
        default:
            // onBWDone, onFCPublish, _result for releaseStream/FCPublish: nothing to do.
            return ([], nil)
        }
    }

    /// A server's reason, from its info object: the code and the description, without
    /// anything of ours (a server may quote the stream key back: it is cut out).
    func words(_ info: AMF0Value?) -> String {
        let code = info?["code"]?.string ?? "no code"
        let description = info?["description"]?.string ?? ""
        var text = description.isEmpty ? code : "\(code) (\(description))"
        if !key.isEmpty { text = text.replacing(key, with: "(the key)") }
        return String(text.prefix(200).map { $0.isASCII && !$0.isNewline ? $0 : "?" })
    }

    // MARK: Media (once live)

    /// @setDataFrame onMetaData (what players and platforms show of the stream).
    public func metadata(_ fields: [(String, AMF0Value)]) -> [UInt8] {
        writer.chunks(RTMPMessage(type: RTMPMessage.dataAMF0, streamID: streamID,
                                  payload: AMF0.encode([.string("@setDataFrame"), .string("onMetaData"), .ecmaArray(fields)])),
                      chunkStream: Self.dataChunks)
    }

    /// A video message with an FLV video tag body (`FLV`), at `timestamp` ms.
    public func video(_ body: [UInt8], timestamp: UInt32) -> [UInt8] {
        writer.chunks(RTMPMessage(type: RTMPMessage.video, streamID: streamID, timestamp: timestamp, payload: body), chunkStream: Self.videoChunks)
    }

    /// An audio message with an FLV audio tag body, at `timestamp` ms.
    public func audio(_ body: [UInt8], timestamp: UInt32) -> [UInt8] {
        writer.chunks(RTMPMessage(type: RTMPMessage.audio, streamID: streamID, timestamp: timestamp, payload: body), chunkStream: Self.audioChunks)
    }

    /// FCUnpublish and deleteStream: the platform ends the broadcast now rather than
    /// after a timeout. Nothing more is sent or read.
    public mutating func stop() -> [UInt8] {
        defer { state = .closed }
        guard state == .live || state == .publishing else { return [] }
        return command("FCUnpublish", .fcUnpublish, [.string(key)]) + command("deleteStream", .deleteStream, [.number(Double(streamID))])
    }

    private func command(_ name: String, _ transaction: Transaction, _ arguments: [AMF0Value], streamID: UInt32 = 0) -> [UInt8] {
        // A command's object is null but connect's (§7.2.1.1).
        let object: [AMF0Value] = name == "connect" ? [] : [.null]
        return writer.chunks(RTMPMessage(type: RTMPMessage.commandAMF0, streamID: streamID,
                                         payload: AMF0.encode([.string(name), .number(transaction.rawValue)] + object + arguments)),
                             chunkStream: Self.commandChunks)
    }

    /// Big-endian, as RTMP's control messages carry their numbers.
    static func u32(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)] }
    static func u32(_ bytes: [UInt8]) -> UInt32 { bytes.prefix(4).reduce(0) { $0 << 8 | UInt32($1) } }
}
