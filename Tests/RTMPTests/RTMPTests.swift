import XCTest
@testable import RTMP

/// AMF0 both ways, and what a server's bytes can make the reader do.
final class AMF0Tests: XCTestCase {
    func testEveryTypeComesBackAsItWent() throws {
        let values: [AMF0Value] = [
            .string("connect"), .number(1), .object([("app", .string("live2")), ("fpad", .boolean(false)), ("capabilities", .number(15))]),
            .null, .undefined, .ecmaArray([("width", .number(1280)), ("stereo", .boolean(true))]),
            .strictArray([.number(1), .string("two"), .null]), .date(1_796_229_753_000), .string(String(repeating: "x", count: 70_000)),
        ]
        XCTAssertEqual(try AMF0.decode(AMF0.encode(values)), values)
        // Not-a-number, as a number or a date (the fuzzer's find), is the value it was.
        let nan = Double(bitPattern: 0xFFFF_FFFF_2E8A_8000)
        XCTAssertEqual(try AMF0.decode(AMF0.encode([.number(nan), .date(nan)])), [.number(nan), .date(nan)])
    }

    /// The bytes as the specification lays them out (§2.2, §2.4, §2.5).
    func testTheBytesAreTheSpecifications() {
        XCTAssertEqual(AMF0.encode([.string("_result")]), [0x02, 0x00, 0x07] + Array("_result".utf8))
        XCTAssertEqual(AMF0.encode([.number(1)]), [0x00, 0x3F, 0xF0, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(AMF0.encode([.object([("a", .boolean(true))])]), [0x03, 0x00, 0x01, 0x61, 0x01, 0x01, 0x00, 0x00, 0x09])
    }

    /// Short input, unknown types, counts larger than the input and bombs: each an error
    /// that says what, never a trap, and the work linear in the input.
    func testWhatIsNotAMF0IsRefusedInWords() {
        XCTAssertThrowsError(try AMF0.decode([0x02, 0x00, 0x09, 0x61])) { XCTAssertTrue("\($0)".contains("truncated"), "\($0)") }
        XCTAssertThrowsError(try AMF0.decode([0x11])) { XCTAssertTrue("\($0)".contains("type 17"), "\($0)") }
        XCTAssertThrowsError(try AMF0.decode([0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0x05])) { XCTAssertTrue("\($0)".contains("strict array"), "\($0)") }
        XCTAssertThrowsError(try AMF0.decode([0x0C, 0xFF, 0xFF, 0xFF, 0xFF]))
        XCTAssertThrowsError(try AMF0.decode([0x03, 0x00, 0x01, 0x61]), "an object without its end")
        let deep = [UInt8](Array(repeating: [0x0A, 0, 0, 0, 1], count: 1000).joined()) + [0x05]
        XCTAssertThrowsError(try AMF0.decode(deep)) { XCTAssertTrue("\($0)".contains("nested"), "\($0)") }
    }
}

/// Messages into chunks and back, however the bytes are split.
final class ChunkTests: XCTestCase {
    func testMessagesComeBackWholeFromAnySplit() throws {
        var writer = ChunkWriter()
        var generator = SystemRandomNumberGenerator()
        var messages: [RTMPMessage] = []
        var bytes: [UInt8] = []
        for (index, size) in [0, 1, 127, 128, 129, 5000, 40_000].enumerated() {
            let message = RTMPMessage(type: index % 2 == 0 ? RTMPMessage.video : RTMPMessage.audio, streamID: 1, timestamp: UInt32(index * 33),
                                      payload: (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) })
            messages.append(message)
            bytes += writer.chunks(message, chunkStream: index % 2 == 0 ? 6 : 4)
            if index == 3 {
                // From here on bigger chunks; the reader learns it from the message.
                let change = writer.setChunkSize(4096)
                messages.append(RTMPMessage(type: RTMPMessage.setChunkSize, payload: [0, 0, 0x10, 0]))
                bytes += change
            }
        }
        // A timestamp past 24 bits (4.6 hours in), on a chunk stream past 63 and past 319.
        for (stream, size) in [(100, 300), (1000, 9000)] {
            let late = RTMPMessage(type: RTMPMessage.video, streamID: 1, timestamp: 0x0123_4567, payload: [UInt8](repeating: 7, count: size))
            messages.append(late)
            bytes += writer.chunks(late, chunkStream: stream)
        }
        for split in [1, 7, 128, 4097, bytes.count] {
            var reader = ChunkReader()
            var read: [RTMPMessage] = []
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + split)
                read += try reader.feed(Array(bytes[offset..<end]))
                offset = end
            }
            XCTAssertEqual(read, messages, "split \(split)")
            XCTAssertEqual(reader.received, UInt64(bytes.count))
        }
    }

    /// Headers of types 1, 2 and 3 take what they leave out from the message before on
    /// their chunk stream (§5.3.1.2): deltas add up.
    func testShorterHeadersRepeatWhatCameBefore() throws {
        var bytes: [UInt8] = [0x03, 0, 0, 100, 0, 0, 2, 20, 1, 0, 0, 0, 0xAA, 0xBB]  // type 0: t=100, 2 bytes, type 20, stream 1
        bytes += [0x43, 0, 0, 10, 0, 0, 1, 8, 0xCC]                                 // type 1: +10, 1 byte, type 8
        bytes += [0x83, 0, 0, 5, 0xDD]                                             // type 2: +5
        bytes += [0xC3, 0xEE]                                                      // type 3: +5 again
        var reader = ChunkReader()
        let messages = try reader.feed(bytes)
        XCTAssertEqual(messages.map(\.timestamp), [100, 110, 115, 120])
        XCTAssertEqual(messages.map(\.type), [20, 8, 8, 8])
        XCTAssertEqual(messages.map(\.streamID), [1, 1, 1, 1])
        XCTAssertEqual(messages.map(\.payload), [[0xAA, 0xBB], [0xCC], [0xDD], [0xEE]])
    }

    /// What a server can make the reader hold is bounded, and said.
    func testTheReaderIsBounded() {
        var reader = ChunkReader()
        XCTAssertThrowsError(try reader.feed([0x03, 0, 0, 0, 0x7F, 0xFF, 0xFF, 20, 0, 0, 0, 0])) {
            XCTAssertTrue("\($0)".contains("8388607 bytes"), "\($0)")
        }
        var fresh = ChunkReader()
        XCTAssertThrowsError(try fresh.feed([0x45, 0, 0, 0, 0, 0, 1, 8, 1])) { XCTAssertTrue("\($0)".contains("begins with a type 1"), "\($0)") }
        var many = ChunkReader()
        var bytes: [UInt8] = []
        for stream in 2..<(2 + ChunkReader.maximumChunkStreams + 1) {
            // An unfinished message on each chunk stream: 200 bytes promised, its first
            // chunk (128) sent.
            bytes += stream < 64 ? [UInt8(stream)] : [0x01, UInt8((stream - 64) & 0xFF), UInt8((stream - 64) >> 8)]
            bytes += [0, 0, 0, 0, 0, 200, 8, 0, 0, 0, 0] + [UInt8](repeating: 0xAB, count: 128)
        }
        XCTAssertThrowsError(try many.feed(bytes)) { XCTAssertTrue("\($0)".contains("chunk streams"), "\($0)") }
    }
}

/// The publisher's side of a connection against a server scripted as nginx-rtmp and the
/// platforms answer.
final class PublishSessionTests: XCTestCase {
    static let key = "abcd-efgh-ijkl-mnop"

    /// A server: reads the client's messages and answers with its own chunks.
    struct Server {
        var reader = ChunkReader()
        var writer = ChunkWriter()
        var skipped = 0

        /// The client's messages in `bytes` (after its C2).
        mutating func read(_ bytes: [UInt8]) throws -> [RTMPMessage] {
            let skip = min(bytes.count, 1536 - skipped)
            skipped += skip
            return try reader.feed(Array(bytes.dropFirst(skip)))
        }

        func command(_ values: [AMF0Value], streamID: UInt32 = 0) -> [UInt8] {
            writer.chunks(RTMPMessage(type: RTMPMessage.commandAMF0, streamID: streamID, payload: AMF0.encode(values)), chunkStream: 3)
        }
    }

    static func commands(_ messages: [RTMPMessage]) throws -> [[AMF0Value]] {
        try messages.filter { $0.type == RTMPMessage.commandAMF0 }.map { try AMF0.decode($0.payload) }
    }

    func live(_ session: inout PublishSession, _ server: inout Server) throws -> [RTMPMessage] {
        let c0c1 = session.start(time: 0, random: [UInt8](repeating: 0x5A, count: 1528))
        XCTAssertEqual(c0c1.count, 1537)
        XCTAssertEqual(c0c1[0], 3)
        let s1 = [UInt8](repeating: 0x11, count: 1536)
        var out = try session.received([3] + s1.prefix(700)).send
        XCTAssertTrue(out.isEmpty, "nothing before the whole handshake")
        out = try session.received(Array(s1.dropFirst(700)) + Array(c0c1.dropFirst())).send
        XCTAssertEqual(Array(out.prefix(1536)), s1, "C2 echoes S1")
        var sent = try server.read(out)
        XCTAssertEqual(sent.first?.type, RTMPMessage.setChunkSize)
        let connect = try XCTUnwrap(try Self.commands(sent).first)
        XCTAssertEqual(connect[0], .string("connect"))
        XCTAssertEqual(connect[2]["app"], .string("live2"))
        XCTAssertEqual(connect[2]["tcUrl"], .string("rtmp://a.rtmp.youtube.com/live2"))
        // The server's window, bandwidth, chunk size, then connect's answer.
        var reply = server.writer.chunks(RTMPMessage(type: RTMPMessage.windowAcknowledgementSize, payload: [0, 0x26, 0x25, 0xA0]), chunkStream: 2)
        reply += server.writer.chunks(RTMPMessage(type: RTMPMessage.setPeerBandwidth, payload: [0, 0x26, 0x25, 0xA0, 2]), chunkStream: 2)
        reply += server.writer.setChunkSize(4096)
        reply += server.command([.string("_result"), .number(1), .object([("fmsVer", .string("FMS/3,0,1,123"))]),
                                 .object([("level", .string("status")), ("code", .string("NetConnection.Connect.Success"))])])
        sent = try server.read(try session.received(reply).send)
        XCTAssertEqual(try Self.commands(sent).map { $0[0] }, [.string("releaseStream"), .string("FCPublish"), .string("createStream")])
        XCTAssertEqual(try Self.commands(sent)[0][3], .string(Self.key))
        sent = try server.read(try session.received(server.command([.string("_result"), .number(4), .null, .number(1)])).send)
        let publish = try XCTUnwrap(try Self.commands(sent).first)
        XCTAssertEqual(publish, [.string("publish"), .number(5), .null, .string(Self.key), .string("live")])
        XCTAssertEqual(sent.first?.streamID, 1)
        let started = try session.received(server.command([.string("onStatus"), .number(0), .null,
                                                           .object([("level", .string("status")), ("code", .string("NetStream.Publish.Start"))])],
                                                          streamID: 1))
        XCTAssertEqual(started.events, [.live])
        XCTAssertEqual(session.state, .live)
        return sent
    }

    func testItConnectsPublishesSendsMediaAndStopsCleanly() throws {
        var session = PublishSession(url: try RTMPURL("rtmp://a.rtmp.youtube.com/live2"), key: Self.key)
        var server = Server()
        _ = try live(&session, &server)
        var media = session.metadata([("width", .number(1280)), ("videocodecid", .number(7))])
        media += session.video(FLV.videoSequenceHeader(sps: [0x67, 0x64, 0x00, 0x1F], pps: [0x68, 0xEE]), timestamp: 0)
        media += session.audio(FLV.audioSequenceHeader([0x11, 0x90]), timestamp: 0)
        let picture = [0, 0, 0, 3, 0x65, 0x88, 0x84] + [UInt8](repeating: 9, count: 9000)
        media += session.video(FLV.videoPicture(picture, isSync: true), timestamp: 0)
        media += session.audio(FLV.audioFrame([0x21, 0x10]), timestamp: 21)
        let read = try server.read(media)
        XCTAssertEqual(read.map(\.type), [18, 9, 8, 9, 8])
        XCTAssertTrue(read.allSatisfy { $0.streamID == 1 })
        XCTAssertEqual(try AMF0.decode(read[0].payload).prefix(2), [.string("@setDataFrame"), .string("onMetaData")])
        XCTAssertEqual(Array(read[1].payload.prefix(6)), [0x17, 0, 0, 0, 0, 1], "AVC sequence header, then the record's version")
        XCTAssertEqual(read[2].payload, [0xAF, 0, 0x11, 0x90])
        XCTAssertEqual(read[3].payload, [0x17, 1, 0, 0, 0] + picture)
        XCTAssertEqual(read[4].timestamp, 21)
        let stop = try server.read(session.stop())
        XCTAssertEqual(try Self.commands(stop).map { $0[0] }, [.string("FCUnpublish"), .string("deleteStream")])
        XCTAssertEqual(try Self.commands(stop)[1][3], .number(1))
        XCTAssertEqual(session.state, .closed)
        XCTAssertTrue(session.stop().isEmpty, "once")
    }

    /// A wrong key: the server's words, without the key (a server may quote it back).
    func testAWrongKeyIsRefusedInTheServersWordsWithoutTheKey() throws {
        var session = PublishSession(url: try RTMPURL("rtmp://a.rtmp.youtube.com/live2"), key: Self.key)
        var server = Server()
        let c0c1 = session.start(time: 0, random: [])
        _ = try server.read(try session.received([3] + [UInt8](repeating: 1, count: 1536) + c0c1.dropFirst()).send)
        _ = try session.received(server.command([.string("_result"), .number(1), .null, .null]))
        _ = try session.received(server.command([.string("_result"), .number(4), .null, .number(1)]))
        XCTAssertThrowsError(try session.received(server.command([.string("onStatus"), .number(0), .null, .object([
            ("level", .string("error")), ("code", .string("NetStream.Publish.BadName")), ("description", .string("no such stream \(Self.key)")),
        ])]))) { error in
            XCTAssertEqual("\(error)", "the server refused the stream: NetStream.Publish.BadName (no such stream (the key))")
        }
    }

    /// A server that lies in its AMF replies: a stream id that is not one, a publish
    /// start before the publish, answers to transactions never asked, replies with no
    /// arguments. Each is ignored or said in words; none goes live before the publish.
    func testAServerThatLiesInItsRepliesIsNotBelieved() throws {
        for streamID: AMF0Value in [.string("1"), .number(-1), .number(1.5), .number(Double(1 << 40)), .number(.nan), .null] {
            var session = PublishSession(url: try RTMPURL("rtmp://127.0.0.1/live"), key: "k")
            var server = Server()
            let c0c1 = session.start(time: 0, random: [])
            _ = try server.read(try session.received([3] + [UInt8](repeating: 1, count: 1536) + c0c1.dropFirst()).send)
            // Answers nothing asked, an early "publish started": nothing happens.
            for lie in [[.string("_result"), .number(99), .null, .number(1)], [.string("_result")], [.number(3)],
                        [.string("onStatus"), .number(0), .null, .object([("code", .string("NetStream.Publish.Start"))])]] as [[AMF0Value]] {
                XCTAssertEqual(try session.received(server.command(lie)).events, [], "\(lie)")
            }
            XCTAssertNotEqual(session.state, .live)
            _ = try session.received(server.command([.string("_result"), .number(1), .null, .null]))
            XCTAssertThrowsError(try session.received(server.command([.string("_result"), .number(4), .null, streamID])), "\(streamID)") {
                XCTAssertEqual("\($0)", "createStream's answer has no stream id")
            }
        }
    }

    /// Ping requests are answered, and the server's window acknowledged.
    func testPingsAreAnsweredAndTheWindowAcknowledged() throws {
        var session = PublishSession(url: try RTMPURL("rtmp://127.0.0.1:1935/live"), key: "k")
        var server = Server()
        let c0c1 = session.start(time: 0, random: [])
        _ = try server.read(try session.received([3] + [UInt8](repeating: 1, count: 1536) + c0c1.dropFirst()).send)
        var reply = server.writer.chunks(RTMPMessage(type: RTMPMessage.windowAcknowledgementSize, payload: [0, 0, 0x10, 0]), chunkStream: 2)
        reply += server.writer.chunks(RTMPMessage(type: RTMPMessage.userControl, payload: [0, 6, 0, 0, 0x12, 0x34]), chunkStream: 2)
        let answered = try server.read(try session.received(reply).send)
        XCTAssertEqual(answered.map(\.type), [RTMPMessage.userControl])
        XCTAssertEqual(answered.first?.payload, [0, 7, 0, 0, 0x12, 0x34])
        let filler = server.writer.chunks(RTMPMessage(type: 22, payload: [UInt8](repeating: 0, count: 5000)), chunkStream: 9)
        let acknowledged = try server.read(try session.received(filler).send)
        XCTAssertEqual(acknowledged.map(\.type), [RTMPMessage.acknowledgement])
    }
}

/// rtmp:// and rtmps:// as users paste them.
final class RTMPURLTests: XCTestCase {
    func testURLsAsPlatformsWriteThem() throws {
        let youtube = try RTMPURL("rtmp://a.rtmp.youtube.com/live2")
        XCTAssertEqual(youtube, try RTMPURL("rtmp://a.rtmp.youtube.com/live2/"))
        XCTAssertEqual([youtube.host, youtube.app], ["a.rtmp.youtube.com", "live2"])
        XCTAssertEqual(youtube.port, 1935)
        let facebook = try RTMPURL("rtmps://live-api-s.facebook.com:443/rtmp/")
        XCTAssertTrue(facebook.secure)
        XCTAssertEqual(facebook.port, 443)
        XCTAssertEqual(facebook.tcURL, "rtmps://live-api-s.facebook.com/rtmp")
        let local = try RTMPURL("rtmp://[::1]:19350/app/instance")
        XCTAssertEqual([local.host, local.app, local.tcURL], ["::1", "app/instance", "rtmp://[::1]:19350/app/instance"])
        for bad in ["http://x/app", "rtmp://x", "rtmp://x/", "rtmp://x:0/a", "rtmp://x:65536/a", "rtmp://x:99999999999999999999999/a",
                    "rtmp://user:pw@x/a", "rtmp://[::1/a", "rtmp://ho st/a"] {
            XCTAssertThrowsError(try RTMPURL(bad), bad)
        }
    }
}
