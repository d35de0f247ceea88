import MP4

/// One RTMP message (RTMP specification 1.0, §5.4): its type, the message stream it
/// belongs to, its timestamp (ms) and its payload.
public struct RTMPMessage: Equatable, Sendable {
    public var type: UInt8
    public var streamID: UInt32
    public var timestamp: UInt32
    public var payload: [UInt8]

    public init(type: UInt8, streamID: UInt32 = 0, timestamp: UInt32 = 0, payload: [UInt8]) {
        self.type = type
        self.streamID = streamID
        self.timestamp = timestamp
        self.payload = payload
    }

    // §5.4 and §7.1: the message types a publisher sends or reads.
    public static let setChunkSize: UInt8 = 1
    public static let abort: UInt8 = 2
    public static let acknowledgement: UInt8 = 3
    public static let userControl: UInt8 = 4
    public static let windowAcknowledgementSize: UInt8 = 5
    public static let setPeerBandwidth: UInt8 = 6
    public static let audio: UInt8 = 8
    public static let video: UInt8 = 9
    public static let dataAMF0: UInt8 = 18
    public static let commandAMF0: UInt8 = 20
}

/// Messages cut into chunks (§5.3): each message's first chunk with a full header (type
/// 0: absolute timestamp, length, type, stream id), the rest of it with none (type 3), at
/// most `chunkSize` payload bytes a chunk. A timestamp past 24 bits is written 0xFFFFFF with
/// the extended timestamp after every chunk header of the message (§5.3.1.3), as FFmpeg and
/// OBS write it.
public struct ChunkWriter: Sendable {
    /// What the peer was told (Set Chunk Size); 128 until then (§5.4.1).
    public private(set) var chunkSize = 128

    public init() {}

    /// The Set Chunk Size message that tells the peer, and from which the writer uses the
    /// new size (1 to 2^31 − 1, §5.4.1).
    public mutating func setChunkSize(_ size: Int) -> [UInt8] {
        let size = max(1, min(size, 0x7FFF_FFFF))
        defer { chunkSize = size }
        return chunks(RTMPMessage(type: RTMPMessage.setChunkSize, payload: PublishSession.u32(UInt32(size))), chunkStream: 2)
    }

    /// `message` as chunks of chunk stream `chunkStream` (2 to 65599; 2 is the protocol
    /// control stream, §5.3.1.1).
    public func chunks(_ message: RTMPMessage, chunkStream: Int) -> [UInt8] {
        var w = ByteWriter(capacity: message.payload.count + 16 + message.payload.count / chunkSize * 5)
        let extended = message.timestamp >= 0xFF_FFFF
        var offset = 0
        repeat {
            basicHeader(&w, format: offset == 0 ? 0 : 3, chunkStream: chunkStream)
            if offset == 0 {
                w.u24(extended ? 0xFF_FFFF : message.timestamp)
                w.u24(UInt32(message.payload.count & 0xFF_FFFF))
                w.u8(message.type)
                // The message stream id is little-endian (§5.3.1.2.1).
                w.u8(UInt8(message.streamID & 0xFF)); w.u8(UInt8((message.streamID >> 8) & 0xFF))
                w.u8(UInt8((message.streamID >> 16) & 0xFF)); w.u8(UInt8(message.streamID >> 24))
            }
            if extended { w.u32(message.timestamp) }
            let end = min(message.payload.count, offset + chunkSize)
            w.append(message.payload[offset..<end])
            offset = end
        } while offset < message.payload.count
        return w.bytes
    }

    private func basicHeader(_ w: inout ByteWriter, format: UInt8, chunkStream: Int) {
        switch chunkStream {
        case 2...63: w.u8(format << 6 | UInt8(chunkStream))
        case 64...319: w.u8(format << 6); w.u8(UInt8(chunkStream - 64))
        default:
            let id = min(max(chunkStream, 320), 65_599) - 64
            w.u8(format << 6 | 1); w.u8(UInt8(id & 0xFF)); w.u8(UInt8(id >> 8))
        }
    }
}

/// Chunks from the peer put back together into messages (§5.3), however the bytes are
/// split. Bounded: a message is at most `maximumMessage` bytes and at most
/// `maximumChunkStreams` chunk streams are followed at once (a publisher's server talks
/// on a few), so what a server can make onair hold is small; the work is linear in the
/// bytes.
public struct ChunkReader: Sendable {
    public static let maximumMessage = 1 << 20
    public static let maximumChunkStreams = 64

    /// The peer's chunk size (its Set Chunk Size messages are applied as they are read).
    public private(set) var chunkSize = 128
    /// Bytes read so far (for acknowledgements, §5.4.3).
    public private(set) var received: UInt64 = 0

    private struct Stream: Sendable {
        var timestamp: UInt32 = 0
        var delta: UInt32 = 0
        var length = 0
        var type: UInt8 = 0
        var streamID: UInt32 = 0
        var extended = false
        var payload: [UInt8] = []
        var started = false
    }

    private var streams: [Int: Stream] = [:]
    private var pending: [UInt8] = []

    public init() {}

    /// The messages `bytes` completes.
    public mutating func feed(_ bytes: [UInt8]) throws -> [RTMPMessage] {
        received &+= UInt64(bytes.count)
        pending += bytes
        var messages: [RTMPMessage] = []
        var position = 0
        while let (message, next) = try chunk(at: position) {
            position = next
            if let message {
                if message.type == RTMPMessage.setChunkSize {
                    guard message.payload.count >= 4 else { throw RTMPError.malformed("Set Chunk Size of \(message.payload.count) bytes") }
                    // The top bit is 0 (§5.4.1): a size fits 31 bits.
                    let size = Int(PublishSession.u32(message.payload) & 0x7FFF_FFFF)
                    guard size >= 1 else { throw RTMPError.malformed("Set Chunk Size 0") }
                    chunkSize = size
                }
                messages.append(message)
            }
        }
        pending.removeFirst(position)
        return messages
    }

    /// The chunk at `position` of what is pending: the message it completes (if any) and
    /// where the next begins; nil while it is not all here.
    private mutating func chunk(at start: Int) throws -> (RTMPMessage?, Int)? {
        var r = ByteReader(pending, range: start..<pending.count)
        do {
            let first = try r.u8()
            let format = first >> 6
            var id = Int(first & 0x3F)
            if id == 0 { id = 64 + Int(try r.u8()) } else if id == 1 { id = 64 + Int(try r.u8()) + Int(try r.u8()) * 256 }
            if streams[id] == nil {
                guard streams.count < Self.maximumChunkStreams else {
                    throw RTMPError.malformed("more than \(Self.maximumChunkStreams) chunk streams")
                }
                guard format == 0 else { throw RTMPError.malformed("chunk stream \(id) begins with a type \(format) header") }
            }
            var stream = streams[id] ?? Stream()
            var field: UInt32 = 0
            switch format {
            case 0:
                field = try r.u24()
                stream.length = Int(try r.u24())
                stream.type = try r.u8()
                let id = try r.take(4)
                stream.streamID = UInt32(id[0]) | UInt32(id[1]) << 8 | UInt32(id[2]) << 16 | UInt32(id[3]) << 24
            case 1:
                field = try r.u24()
                stream.length = Int(try r.u24())
                stream.type = try r.u8()
            case 2:
                field = try r.u24()
            default:
                break
            }
            if format < 3 { stream.extended = field == 0xFF_FFFF }
            if stream.extended {
                let value = try r.u32()
                if format < 3 { field = value }
            }
            guard stream.length <= Self.maximumMessage else {
                throw RTMPError.malformed("a message of \(stream.length) bytes (at most \(Self.maximumMessage) are read)")
            }
            if !stream.started {
                // A new message: its timestamp is absolute (type 0) or a delta (types 1, 2,
                // and 3 repeating the last delta).
                switch format {
                case 0: stream.timestamp = field; stream.delta = 0
                case 1, 2: stream.delta = field; stream.timestamp &+= field
                default: stream.timestamp &+= stream.delta
                }
                stream.payload = []
                stream.payload.reserveCapacity(min(stream.length, Self.maximumMessage))
                stream.started = true
            }
            let take = min(chunkSize, stream.length - stream.payload.count)
            stream.payload += try r.take(take)
            var message: RTMPMessage?
            if stream.payload.count == stream.length {
                message = RTMPMessage(type: stream.type, streamID: stream.streamID, timestamp: stream.timestamp, payload: stream.payload)
                stream.payload = []
                stream.started = false
            }
            streams[id] = stream
            return (message, r.position)
        } catch is MP4Error {
            return nil  // the chunk is not all here yet
        }
    }
}
