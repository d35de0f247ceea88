import Basics
import Live
@testable import Access
import Foundation
import Logging
import RTP
import System
import TestSupport
import Threading
import XCTest
@testable import RTSP

/// The server as a client on a connection sees it: every method, its order, its refusals,
/// the media that follow PLAY. The pictures are fed as the live output would feed them.
/// On virtual time: the server runs on in-memory ports and a manual clock, with no thread
/// of its own; each client's read runs its turns (the integration tests play it over
/// real TCP and UDP with ffmpeg and GStreamer).
final class RTSPServerTests: XCTestCase {
    static let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1F, 0x8C, 0x8D, 0x40]
    static let pps: [UInt8] = [0x68, 0xCE, 0x3C, 0x80]
    static let audio = RealTimeStream.Audio(config: [0x11, 0x90], sampleRate: 48_000, channels: 2)
    static let base = "rtsp://127.0.0.1:554/live"

    func server(maxClients: Int = 8, perAddress: Int = 4, timeout: Int = 60, access: AccessGate? = nil, log: Log = .silent()) -> Rig {
        let rig = Rig(settings: .init(host: "127.0.0.1", port: 554, maxClients: maxClients, perAddress: perAddress,
                                      sessionTimeoutSeconds: timeout, access: access), log: log)
        addTeardownBlock { rig.server.feed.stop() }
        return rig
    }

    func live(_ server: RTSPServer, id: String = "boot-1", audio: Bool = true) {
        server.feed.begin(RealTimeStream(id: id, audio: audio ? Self.audio : nil))
        picture(server, sync: true)
    }

    func picture(_ server: RTSPServer, sync: Bool, at time: Int64 = KernelClock.monotonic()) {
        let unit: [UInt8] = sync ? [0x65, 0x88, 0x84, 0x00] : [0x41, 0x9A, 0x02]
        server.feed.publish(RealTimePicture(accessUnit: [0, 0, 0, UInt8(unit.count)] + unit, captureTime: time, isSync: sync, sps: Self.sps, pps: Self.pps))
    }

    func testAClientDescribesSetsUpPlaysAndGetsMediaFromTheNextIDR() throws {
        let rig = server(), server = rig.server
        live(server)
        let client = rig.connect()
        let base = Self.base
        XCTAssertEqual(client.request("OPTIONS", base).headers["public"], "OPTIONS, DESCRIBE, SETUP, PLAY, PAUSE, TEARDOWN, GET_PARAMETER")
        let described = client.request("DESCRIBE", base, ["Accept": "application/sdp"])
        XCTAssertEqual(described.status, 200)
        XCTAssertEqual(described.headers["content-base"], base + "/")
        XCTAssertEqual(described.headers["content-type"], "application/sdp")
        XCTAssertTrue(described.body.contains("sprop-parameter-sets=\(Base64.encode(Self.sps)),\(Base64.encode(Self.pps))"), described.body)
        XCTAssertTrue(described.body.contains("a=rtpmap:97 mpeg4-generic/48000/2"), described.body)
        let video = client.request("SETUP", base + "/trackID=0", ["Transport": "RTP/AVP/TCP;unicast;interleaved=0-1"])
        XCTAssertEqual(video.status, 200)
        XCTAssertTrue(video.headers["transport"]?.hasPrefix("RTP/AVP/TCP;unicast;interleaved=0-1;ssrc=") ?? false)
        let session = try XCTUnwrap(video.headers["session"]?.split(separator: ";").first.map(String.init))
        XCTAssertEqual(video.headers["session"], "\(session);timeout=60")
        XCTAssertEqual(client.request("SETUP", base + "/trackID=1", ["Transport": "RTP/AVP/TCP;unicast;interleaved=2-3", "Session": session]).status, 200)
        XCTAssertTrue(server.sessions.isEmpty == false && server.sessions[0].playing == false)
        let played = client.request("PLAY", base + "/", ["Session": session, "Range": "npt=0.000-"])
        XCTAssertEqual(played.status, 200)
        let info = try XCTUnwrap(played.headers["rtp-info"])
        XCTAssertTrue(info.hasPrefix("url=\(base)/trackID=0;seq="), info)
        let firstSequence = try XCTUnwrap(info.split(separator: ",")[0].split(separator: ";")[1].split(separator: "=").last.flatMap { UInt16($0) })
        XCTAssertEqual(server.sessions.first?.playing, true)

        // A picture that is not an IDR, and sound before the IDR, are not sent; the IDR
        // comes after a sender report on each track, numbered from RTP-Info's seq.
        picture(server, sync: false)
        server.feed.publish(RealTimeSound(accessUnit: [0x21, 0x10, 0x05], captureTime: KernelClock.monotonic()))
        let time = KernelClock.monotonic()
        picture(server, sync: true, at: time)
        server.feed.publish(RealTimeSound(accessUnit: [0x21, 0x10, 0x06], captureTime: time))
        var received: [(UInt8, [UInt8])] = []
        while received.filter({ $0.0 == 0 || $0.0 == 2 }).count < 2, let next = client.interleaved() { received.append(next) }
        XCTAssertEqual(received.prefix(3).map(\.0), [1, 3, 0], "reports on 1 and 3, then the IDR on 0")
        XCTAssertEqual(received.map(\.0).filter { $0 % 2 == 0 }, [0, 2], "then the sound on 2")
        let reports = try received.filter { $0.0 == 1 || $0.0 == 3 }.map { try RTCPPacket.parse($0.1) }
        guard case .senderReport(let report) = reports[0].first else { return XCTFail("\(reports)") }
        XCTAssertEqual(report.packetCount, 0)
        let idr = try RTPPacket(parsing: received[2].1)
        XCTAssertEqual(idr.sequenceNumber, firstSequence)
        XCTAssertEqual(idr.payloadType, 96)
        XCTAssertEqual(idr.timestamp, RTPClock.video(time))
        XCTAssertTrue(idr.marker)
        XCTAssertEqual(idr.payload.first.map { $0 & 0x1F }, 24, "SPS, PPS and the IDR in one STAP-A")
        let sound = try RTPPacket(parsing: try XCTUnwrap(received.last { $0.0 == 2 }).1)
        XCTAssertEqual(sound.payloadType, 97)
        XCTAssertEqual(sound.timestamp, RTPClock.timestamp(time, rate: 48_000))
        XCTAssertEqual(AACPacketizer.accessUnits(sound.payload), [[0x21, 0x10, 0x06]])

        // A second later on the server's clock, a sender report on each track again.
        rig.clock.advance(by: 1_000_000_000)
        var again: [UInt8] = []
        while again.count < 2, let next = client.interleaved() { again.append(next.0) }
        XCTAssertEqual(again.sorted(), [1, 3])

        XCTAssertEqual(client.request("GET_PARAMETER", base + "/", ["Session": session]).status, 200)
        XCTAssertEqual(client.request("PAUSE", base + "/", ["Session": session]).status, 200)
        XCTAssertEqual(client.request("TEARDOWN", base + "/", ["Session": session]).status, 200)
        XCTAssertEqual(client.request("PLAY", base + "/", ["Session": session]).status, 454, "the session is gone")
        XCTAssertTrue(server.sessions.isEmpty)
        XCTAssertEqual(server.feed.readers.count, 0, "the feed left when no one plays")
    }

    /// With users, DESCRIBE and SETUP want one (Digest, MD5 without qop, as RTSP clients
    /// answer it); OPTIONS and keep-alives do not, nor what follows in the session a
    /// user set up.
    func testDescribeAndSetupAskForAUser() throws {
        let realm = "onair-5eed"
        let list = AccessList(realm: realm, viewers: [AccessList.viewer(AccessList.viewerValue(name: "alice", password: "correct horse", realm: realm))!])
        let rig = server(access: AccessGate(list: list, log: .silent()))
        live(rig.server)
        let client = rig.connect()
        let base = Self.base
        XCTAssertEqual(client.request("OPTIONS", base).status, 200)
        XCTAssertEqual(client.request("GET_PARAMETER", base).status, 200)
        let challenged = client.request("DESCRIBE", base)
        XCTAssertEqual(challenged.status, 401)
        let challenge = try XCTUnwrap(challenged.headers["www-authenticate"])
        XCTAssertTrue(challenge.hasPrefix("Digest realm=\"\(realm)\", algorithm=MD5, nonce=\""), challenge)
        XCTAssertEqual(client.request("SETUP", base + "/trackID=0", ["Transport": "RTP/AVP/TCP;unicast;interleaved=0-1"]).status, 401)
        let nonce = try XCTUnwrap(challenge.split(separator: "\"").dropFirst(3).first.map(String.init))
        func answer(_ method: String, _ uri: String, password: String = "correct horse") -> String {
            let stored = AccessList.credentialDigest("alice", realm, password, .md5)
            let response = AccessList.hex(DigestAuthority.response(stored: stored, nonce: nonce, counted: nil, method: method, uri: uri, .md5))
            return "Digest username=\"alice\", realm=\"\(realm)\", nonce=\"\(nonce)\", uri=\"\(uri)\", response=\"\(response)\""
        }
        XCTAssertEqual(client.request("DESCRIBE", base, ["Authorization": answer("DESCRIBE", base, password: "wrong")]).status, 401)
        XCTAssertEqual(client.request("DESCRIBE", base, ["Authorization": answer("DESCRIBE", base)]).status, 200)
        let video = client.request("SETUP", base + "/trackID=0", ["Transport": "RTP/AVP/TCP;unicast;interleaved=0-1",
                                                                  "Authorization": answer("SETUP", base + "/trackID=0")])
        XCTAssertEqual(video.status, 200)
        let session = try XCTUnwrap(video.headers["session"]?.split(separator: ";").first.map(String.init))
        XCTAssertEqual(client.request("PLAY", base + "/", ["Session": session]).status, 200, "the session was set up by a user")
        XCTAssertEqual(client.request("TEARDOWN", base + "/", ["Session": session]).status, 200)
    }

    /// RTP to the client's port from the server's, sender reports to its RTCP port from the
    /// server's; a receiver report from the client is a sign of life.
    func testUDPClientsGetPacketsAtTheirPortsFromTheServersPair() throws {
        let rig = server(), server = rig.server
        live(server, audio: false)
        let client = rig.connect()
        let base = Self.base
        XCTAssertEqual(client.request("SETUP", base + "/trackID=1", ["Transport": "RTP/AVP;unicast;client_port=5000-5001"]).status, 404,
                       "no sound in this stream")
        let setUp = client.request("SETUP", base + "/trackID=0", ["Transport": "RTP/AVP;multicast,RTP/AVP;unicast;client_port=5000-5001"])
        XCTAssertEqual(setUp.status, 200)
        XCTAssertTrue(setUp.headers["transport"]?.contains("server_port=\(server.mediaPorts.rtp)-\(server.mediaPorts.rtcp)") ?? false)
        let session = try XCTUnwrap(setUp.headers["session"]?.split(separator: ";").first.map(String.init))
        XCTAssertEqual(client.request("PLAY", base, ["Session": session]).status, 200)
        XCTAssertEqual(server.sessions.first?.transport, "udp")
        picture(server, sync: true)
        rig.turn()
        let packets = rig.rtp.sent()
        XCTAssertFalse(packets.isEmpty)
        XCTAssertEqual(Set(packets.map { "\($0.to.host):\($0.to.port)" }), ["127.0.0.1:5000"])
        XCTAssertEqual(try RTPPacket(parsing: try XCTUnwrap(packets.first).bytes).payloadType, 96)
        let reports = rig.rtcp.sent()
        XCTAssertEqual(reports.map(\.to.port), [5001])
        guard case .senderReport = try RTCPPacket.parse(try XCTUnwrap(reports.first).bytes).first else { return XCTFail("not a sender report") }
        // Heard over UDP only (a receiver report to the RTCP port) for 59 s twice: kept.
        for _ in 0..<2 {
            rig.clock.advance(by: 59_000_000_000)
            rig.rtcp.deliver([0x80, 201, 0, 1, 0, 0, 0, 1], from: try XCTUnwrap(SocketAddress(bytes: [127, 0, 0, 1], port: 5001)))
            rig.turn()
        }
        XCTAssertEqual(server.sessions.count, 1)
        // The client goes (killed: its connection closes): its session ends at once.
        client.end.hangUp()
        rig.turn()
        XCTAssertTrue(server.sessions.isEmpty)
    }

    func testRequestsOutOfOrderOrMalformedGetTheirStatus() throws {
        let rig = server(), server = rig.server
        let base = Self.base
        let client = rig.connect()
        XCTAssertEqual(client.request("DESCRIBE", base).status, 503, "nothing live yet")
        live(server, audio: false)
        XCTAssertEqual(client.request("DESCRIBE", "rtsp://127.0.0.1/elsewhere").status, 404)
        XCTAssertEqual(client.request("DESCRIBE", "rtsp://127.0.0.1/streams/boot-1").status, 200)
        XCTAssertEqual(client.request("DESCRIBE", "rtsp://127.0.0.1/streams/boot-2").status, 404)
        XCTAssertEqual(client.request("PLAY", base, [:]).status, 454, "PLAY before SETUP")
        XCTAssertEqual(client.request("PLAY", base, ["Session": "12345"]).status, 454)
        XCTAssertEqual(client.request("SETUP", base + "/trackID=7", ["Transport": "RTP/AVP/TCP;interleaved=0-1"]).status, 404)
        XCTAssertEqual(client.request("SETUP", base + "/trackID=0", ["Transport": "RTP/AVP;multicast"]).status, 461)
        XCTAssertEqual(client.request("SETUP", base + "/trackID=0", ["Transport": "RTP/AVP/TCP;interleaved=300-301"]).status, 461)
        XCTAssertEqual(client.request("SETUP", base + "/trackID=0", [:]).status, 461)
        XCTAssertEqual(client.request("ANNOUNCE", base).status, 405)
        XCTAssertEqual(client.request("FROBNICATE", base).status, 501)
        XCTAssertEqual(client.request("OPTIONS", "*").status, 200)
        // No CSeq: 400, and the connection stays.
        client.end.write("OPTIONS \(base) RTSP/1.0\r\n\r\n")
        XCTAssertEqual(client.response()?.status, 400)
        XCTAssertEqual(client.request("OPTIONS", base).status, 200)
        // HTTP on the RTSP port: 505, then the connection is closed.
        client.end.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(client.response()?.status, 505)
        XCTAssertTrue(rig.turns { client.end.isClosedByServer })
        // A head past 8 KiB: 413, closed.
        let other = rig.connect()
        other.end.write("OPTIONS \(base) RTSP/1.0\r\nCSeq: 1\r\nX: " + String(repeating: "a", count: 10_000))
        XCTAssertEqual(other.response()?.status, 413)
        XCTAssertTrue(rig.turns { other.end.isClosedByServer })
    }

    /// A client that trickles a head and never finishes it is closed 10 s after its first
    /// byte, on the server's clock; one that sends nothing is kept until the session timeout.
    func testARequestNotFinishedInTenSecondsClosesTheConnection() {
        let rig = server()
        let trickler = rig.connect(), quiet = rig.connect(from: "127.0.0.2")
        trickler.end.write("OPTIONS * RTSP/1.0\r\nCSe")
        rig.turn()  // taken
        rig.turn()  // read: the head has begun
        rig.clock.advance(by: 9_000_000_000)
        trickler.end.write("q: 1")
        rig.turn()
        XCTAssertFalse(trickler.end.isClosedByServer)
        rig.clock.advance(by: 1_000_000_001)
        rig.turn()
        XCTAssertTrue(trickler.end.isClosedByServer)
        XCTAssertFalse(quiet.end.isClosedByServer)
    }

    /// Connections over the limit — in all, or from one address — are told 503 at once and
    /// closed; another address is still served.
    func testClientsAreLimitedInAllAndPerAddress() throws {
        let rig = server(maxClients: 3, perAddress: 2)
        live(rig.server)
        let first = rig.connect(), second = rig.connect()
        XCTAssertEqual(first.request("OPTIONS", "*").status, 200)
        XCTAssertEqual(second.request("OPTIONS", "*").status, 200)
        let third = rig.connect()
        XCTAssertEqual(third.response()?.status, 503)
        XCTAssertTrue(third.end.isClosedByServer)
        let elsewhere = rig.connect(from: "127.0.0.2")
        XCTAssertEqual(elsewhere.request("OPTIONS", "*").status, 200)
        // Every place is taken by a connection that plays nothing: the oldest gives its
        // place to a new client.
        rig.clock.advance(by: 1)
        let fourth = rig.connect(from: "127.0.0.3")
        XCTAssertEqual(fourth.request("OPTIONS", "*").status, 200, "an idle connection's place")
        XCTAssertTrue(first.end.isClosedByServer)
        XCTAssertEqual(second.request("OPTIONS", "*").status, 200, "the oldest idle one went, only it")
    }

    /// Issue 45: a client that begins to play asks the live encoder for a picture at once
    /// (once per PLAY that starts it, not for a PLAY that only refreshes).
    func testPlayAsksTheEncoderForAPicture() throws {
        let rig = server(), server = rig.server
        let asked = Locked(0)
        server.feed.begin(RealTimeStream(id: "boot-1", audio: nil, askForPicture: { asked.withLock { $0 += 1 } }))
        picture(server, sync: true)
        let client = rig.connect()
        let base = Self.base
        let setup = client.request("SETUP", base + "/trackID=0", ["Transport": "RTP/AVP/TCP;unicast;interleaved=0-1"])
        let session = try XCTUnwrap(setup.headers["session"]?.split(separator: ";").first.map(String.init))
        XCTAssertEqual(asked.withLock { $0 }, 0, "nothing plays yet")
        XCTAssertEqual(client.request("PLAY", base + "/", ["Session": session]).status, 200)
        XCTAssertEqual(asked.withLock { $0 }, 1)
        XCTAssertEqual(client.request("PLAY", base + "/", ["Session": session]).status, 200)
        XCTAssertEqual(asked.withLock { $0 }, 1, "already playing")
    }

    /// Issue 44: connections that play nothing, kept alive, cannot keep a real client out;
    /// playing clients keep their places, and when every place plays, a new one is refused.
    func testIdleConnectionsGiveTheirPlacesToAClientThatPlays() throws {
        let rig = server(maxClients: 3, perAddress: 2)
        live(rig.server)
        let base = Self.base
        let idle = (0..<3).map { n in rig.connect(from: "127.0.0.\(n + 1)") }
        for client in idle { XCTAssertEqual(client.request("GET_PARAMETER", base).status, 200) }
        for n in 0..<3 {
            rig.clock.advance(by: 1)
            let player = rig.connect(from: "127.0.1.\(n + 1)")
            let setup = player.request("SETUP", base + "/trackID=0", ["Transport": "RTP/AVP/TCP;unicast;interleaved=0-1"])
            XCTAssertEqual(setup.status, 200, "player \(n)")
            let session = try XCTUnwrap(setup.headers["session"]?.split(separator: ";").first.map(String.init))
            XCTAssertEqual(player.request("PLAY", base + "/", ["Session": session]).status, 200)
        }
        for client in idle { XCTAssertTrue(client.end.isClosedByServer) }
        let late = rig.connect(from: "127.0.2.1")
        XCTAssertEqual(late.response()?.status, 503, "every place plays")
        XCTAssertEqual(rig.server.sessions.filter(\.playing).count, 3)
    }

    /// Issue 44: a client that pipelines requests and never reads the answers is not read
    /// further once 64 KiB of answers wait for it — TCP holds it back, not onair's memory —
    /// and every answer is still there, in order, when it reads; others are served meanwhile.
    func testAClientThatDoesNotReadIsHeldBackByTCP() throws {
        let rig = server()
        live(rig.server)
        // A window of 4 KiB: what the kernel's buffers would hold of what it is sent.
        let greedy = rig.connect(window: 4096)
        let pad = String(repeating: "p", count: 2000)
        func request(_ cseq: Int) -> String { "DESCRIBE \(Self.base) RTSP/1.0\r\nCSeq: \(cseq)\r\nX-Pad: \(pad)\r\n\r\n" }
        let count = 2000
        for cseq in 1_000_000..<(1_000_000 + count) { greedy.end.write(request(cseq)) }
        let written = greedy.end.unread
        for _ in 0..<50 { rig.turn() }
        let unread = greedy.end.unread
        XCTAssertGreaterThan(unread, 0, "the server stopped reading a client that does not read")
        XCTAssertLessThan(written - unread, written / 4, "it read about as many requests as make 64 KiB of answers, then stopped")
        for _ in 0..<50 { rig.turn() }
        XCTAssertEqual(greedy.end.unread, unread, "and reads nothing more while the answers wait")
        let other = rig.connect(from: "127.0.0.2")
        XCTAssertEqual(other.request("OPTIONS", "*").status, 200, "others are served meanwhile")
        for expected in 1_000_000..<(1_000_000 + count) {
            guard let answer = greedy.response() else { return XCTFail("answer \(expected) missing") }
            XCTAssertEqual(answer.status, 200)
            guard answer.headers["cseq"] == String(expected) else { return XCTFail("answer \(answer.headers["cseq"] ?? "-") where \(expected) was due") }
        }
        XCTAssertEqual(greedy.end.unread, 0)
    }

    /// Nothing heard for the session timeout (RFC 2326 §12.37): the connection and its
    /// session are ended — on the server's clock, which the test moves.
    func testASilentClientIsEndedAfterTheTimeout() throws {
        let ended = Locked<[String]>([])
        let rig = server(timeout: 60, log: .silent { event, _, fields in
            if event == .rtspEnded { ended.withLock { $0.append("\(fields.first { $0.0 == "reason" }?.1 ?? "")") } }
        })
        let server = rig.server
        live(server)
        let client = rig.connect()
        XCTAssertEqual(client.request("SETUP", Self.base + "/trackID=0", ["Transport": "RTP/AVP/TCP;interleaved=0-1"]).status, 200)
        // 59 s on its clock: the server keeps the session (its table says the session's age).
        rig.clock.advance(by: 59_000_000_000)
        rig.turn()
        XCTAssertEqual(server.sessions.first?.ageMs, 59_000)
        XCTAssertFalse(client.end.isClosedByServer)
        XCTAssertEqual(client.request("OPTIONS", "*", ["Session": try XCTUnwrap(server.sessions.first?.id)]).status, 200, "heard: the time starts again")
        rig.clock.advance(by: 60_000_000_000)
        rig.turn()
        XCTAssertEqual(server.sessions.first?.ageMs, 119_000)
        XCTAssertFalse(client.end.isClosedByServer, "60 s is not past the timeout")
        rig.clock.advance(by: 1)
        rig.turn()
        XCTAssertTrue(client.end.isClosedByServer)
        XCTAssertEqual(ended.withLock { $0 }, ["nothing heard for 60 s"])
        XCTAssertTrue(server.sessions.isEmpty)
    }
}

/// A server with no thread on in-memory ports and a manual clock; the test runs its turns.
final class Rig {
    let server: RTSPServer
    let streams = MemoryStreams()
    let rtp = MemoryDatagrams(), rtcp = MemoryDatagrams()
    let clock = ManualClock()
    private let clients = RTSPServer.Clients()

    init(settings: RTSPServer.Settings, log: Log) {
        server = RTSPServer(settings: settings, feed: LiveFeed(log: log), log: log, clock: ServerClock(monotonic: clock, wallOffset: { 0 }),
                            streams: streams, port: settings.port, rtp: rtp, rtcp: rtcp, mediaPorts: (6970, 6971), thread: false)
    }

    func turn() { server.turn(clients, timeoutMs: 0) }

    /// Turns until `condition` holds, at most 100; whether it did.
    func turns(until condition: () -> Bool) -> Bool {
        for _ in 0..<100 {
            if condition() { return true }
            turn()
        }
        return condition()
    }

    func connect(from source: String = "127.0.0.1", window: Int = 1 << 20) -> Client {
        Client(end: streams.connect(from: SocketAddress(numeric: source, port: 40_000, ipv6: false)!, window: window), rig: self)
    }
}

/// An RTSP client as plain as a test needs: requests with CSeq, responses and
/// interleaved frames read from one buffer in the order they come. Reading runs the
/// server's turns until something comes.
final class Client {
    let end: MemoryStreams.Client
    let rig: Rig
    private var buffer: [UInt8] = []
    private var cseq = 0

    struct Response {
        var status: Int
        var headers: [String: String]
        var body: String
    }

    init(end: MemoryStreams.Client, rig: Rig) {
        self.end = end
        self.rig = rig
    }

    func request(_ method: String, _ uri: String, _ headers: [String: String] = [:]) -> Response {
        cseq += 1
        var text = "\(method) \(uri) RTSP/1.0\r\nCSeq: \(cseq)\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        end.write(text + "\r\n")
        return response() ?? Response(status: 0, headers: [:], body: "")
    }

    /// The next response (interleaved frames before it are skipped).
    func response() -> Response? {
        while true {
            while buffer.first == UInt8(ascii: "$") {
                guard takeFrame() != nil else { break }
            }
            if buffer.first != UInt8(ascii: "$"), let end = buffer.firstRange(of: [13, 10, 13, 10]) {
                let head = String(decoding: buffer[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
                var headers: [String: String] = [:]
                for line in head.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                let length = Int(headers["content-length"] ?? "0") ?? 0
                if buffer.count >= end.upperBound + length {
                    let body = String(decoding: buffer[end.upperBound..<(end.upperBound + length)], as: UTF8.self)
                    buffer.removeFirst(end.upperBound + length)
                    let status = head[0].split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
                    return Response(status: status, headers: headers, body: body)
                }
            }
            guard fill() else { return nil }
        }
    }

    /// The next interleaved frame: its channel and payload.
    func interleaved() -> (UInt8, [UInt8])? {
        while true {
            if let frame = takeFrame() { return frame }
            guard fill() else { return nil }
        }
    }

    private func takeFrame() -> (UInt8, [UInt8])? {
        guard buffer.count >= 4, buffer[0] == UInt8(ascii: "$") else { return nil }
        let length = Int(buffer[2]) << 8 | Int(buffer[3])
        guard buffer.count >= 4 + length else { return nil }
        defer { buffer.removeFirst(4 + length) }
        return (buffer[1], Array(buffer[4..<(4 + length)]))
    }

    /// What the server sent, taking turns until something comes (at most 20 turns: a
    /// server that has nothing to say in them says nothing).
    private func fill() -> Bool {
        for _ in 0..<20 {
            let bytes = end.read()
            if !bytes.isEmpty {
                buffer += bytes
                return true
            }
            rig.turn()
        }
        return false
    }
}
