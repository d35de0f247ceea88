import RTMP

/// The readers of what an RTMP server sends a publisher (issue 46): a platform's ingest,
/// or whatever answers at the address a user typed.
extension FuzzTargets {
    /// AMF0 values (commands' arguments, replies' info objects): a list that reads
    /// writes back to one that reads the same.
    static let amf0 = FuzzTarget(name: "amf0", seeds: [
        AMF0.encode([.string("_result"), .number(1), .object([("fmsVer", .string("FMS/3,0,1,123")), ("capabilities", .number(31))]),
                     .object([("level", .string("status")), ("code", .string("NetConnection.Connect.Success")),
                              ("data", .ecmaArray([("version", .string("3,5,3,888"))])), ("list", .strictArray([.null, .undefined, .boolean(true)]))])]),
        // A long string (§2.14) with a short text: written back as a string, read the same.
        AMF0.encode([.string("onStatus"), .number(0), .null, .object([("level", .string("error")), ("code", .string("NetStream.Publish.BadName"))]),
                     .date(1_796_229_753_000)]) + [0x0C, 0, 0, 0, 3, 0x61, 0x62, 0x63],
    ], textual: false) { bytes in
        guard let values = try? AMF0.decode(bytes) else { return }
        guard (try? AMF0.decode(AMF0.encode(values))) == values else { broken("AMF0 values that do not write back as they read") }
    }

    /// A server's side of a connection: the handshake, then chunks in any header form,
    /// Set Chunk Size, acknowledgement windows, pings and commands, fed to the publisher's
    /// session in pieces; the chunk reader alone gets the same bytes.
    static let rtmp: FuzzTarget = {
        var writer = ChunkWriter()
        var server: [UInt8] = [3] + [UInt8](repeating: 0x11, count: 3072)
        server += writer.chunks(RTMPMessage(type: RTMPMessage.windowAcknowledgementSize, payload: [0, 0, 0x10, 0]), chunkStream: 2)
        server += writer.chunks(RTMPMessage(type: RTMPMessage.userControl, payload: [0, 6, 0, 0, 0x12, 0x34]), chunkStream: 2)
        server += writer.setChunkSize(300)
        func command(_ values: [AMF0Value], streamID: UInt32 = 0) -> [UInt8] {
            writer.chunks(RTMPMessage(type: RTMPMessage.commandAMF0, streamID: streamID, payload: AMF0.encode(values)), chunkStream: 3)
        }
        server += command([.string("_result"), .number(1), .null, .object([("code", .string("NetConnection.Connect.Success"))])])
        server += command([.string("_result"), .number(4), .null, .number(1)])
        server += command([.string("onStatus"), .number(0), .null, .object([("level", .string("status")), ("code", .string("NetStream.Publish.Start"))])],
                          streamID: 1)
        server += writer.chunks(RTMPMessage(type: 22, timestamp: 0x0123_4567, payload: [UInt8](repeating: 5, count: 1000)), chunkStream: 400)
        return FuzzTarget(name: "rtmp", seeds: [server], textual: false) { bytes in
            var reader = ChunkReader()
            if let messages = try? reader.feed(bytes), messages.contains(where: { $0.payload.count > ChunkReader.maximumMessage }) {
                broken("a message past the reader's bound")
            }
            var session = PublishSession(url: (try? RTMPURL("rtmp://127.0.0.1/live")) ?? { fatalError("the fuzzer's own URL") }(), key: "fuzz-key")
            _ = session.start(time: 0, random: [])
            // In three pieces, as a socket might deliver them.
            let cuts = [0, bytes.count / 3, 2 * bytes.count / 3, bytes.count]
            for index in 0..<3 {
                guard (try? session.received(Array(bytes[cuts[index]..<cuts[index + 1]]))) != nil else { return }
            }
            if session.state == .live { _ = session.video(FLV.videoPicture([0, 0, 0, 1, 0x65], isSync: true), timestamp: 0) }
            _ = session.stop()
        }
    }()
}
