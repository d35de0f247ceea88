import CMicroHTTPD
import Files
import System

/// An answer as the handler composes it, and its hand-over to libmicrohttpd.
extension WebServer {
    struct Reply {
        var status: UInt32
        var body: Body
        var headers: [(String, String)] = []
        enum Body {
            case bytes([UInt8]), file(FileDescriptor, offset: Int64, length: Int64)
            /// Pieces of files; `holding` lives as long as the response (a download's slot).
            case joined(JoinedFile, offset: Int64, length: Int64, holding: AnyObject? = nil)
        }

        /// A refusal or a short answer in one line of plain text.
        static func text(_ status: UInt32, _ message: String) -> Reply {
            Reply(status: status, body: .bytes(Array((message + "\n").utf8)), headers: [("Content-Type", "text/plain")])
        }
    }

    func send(_ reply: Reply, on connection: OpaquePointer) -> MHD_Result {
        let response: OpaquePointer?
        switch reply.body {
        case .bytes(let bytes):
            response = bytes.withUnsafeBytes { raw in
                MHD_create_response_from_buffer(raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), .RESPMEM_MUST_COPY)
            }
        case .file(let fd, let offset, let length):
            // MHD owns the descriptor from here and sends it with sendfile where it can.
            response = MHD_create_response_from_fd_at_offset64(UInt64(length), fd.release(), UInt64(offset))
        case .joined(let file, let offset, let length, let holding):
            response = Self.response(file, offset: offset, length: length, holding: holding)
        }
        guard let response else { return .NO }
        for (name, value) in reply.headers { MHD_add_response_header(response, name, value) }
        let result = MHD_queue_response(connection, reply.status, response)
        MHD_destroy_response(response)
        return result
    }
}
