import CMicroHTTPD
import HLS
import Layout
import Threading

/// Low-latency HLS on the built-in server (RFC 8216bis §6.2.5.2, §6.2.6): the live
/// playlist with its parts, answered at once or held until the part it asks for exists,
/// and the parts themselves from memory, the hinted next one held until it is made.
///
/// A held request takes no thread: libmicrohttpd suspends its connection
/// (`MHD_suspend_connection`, the daemon started with MHD_ALLOW_SUSPEND_RESUME) and the
/// live edge's wake, or the deadline, resumes it; the handler is then called again and
/// answers, or suspends it again. Its internal polling mode would not do: every held
/// request would still be polled on every pass, and a thread per connection would cost
/// 500 threads for 500 viewers.
extension WebServer {
    /// What a held request carries between its suspension and its resumption, in
    /// libmicrohttpd's per-request pointer.
    final class Held: Sendable {
        let directives: DeliveryDirectives
        /// When it is answered 503 if the part has still not come (§6.2.5.2).
        let deadline: Int64
        private let timedOut_ = Locked(false)
        var timedOut: Bool {
            get { timedOut_.withLock { $0 } }
            set { timedOut_.withLock { $0 = newValue } }
        }
        init(directives: DeliveryDirectives, deadline: Int64) {
            self.directives = directives
            self.deadline = deadline
        }
    }

    /// A connection handed to another thread to resume: libmicrohttpd's handles are safe
    /// to resume from any thread with MHD_USE_ITC.
    struct Connection: @unchecked Sendable { let pointer: OpaquePointer }

    /// `/streams/<id>/playlist.m3u8` and `/streams/<id>/part/<msn>.<index>.m4s` of a live
    /// stream; nil for anything else (the file server answers it).
    enum LowLatencyPath: Equatable {
        case playlist(id: String)
        case part(id: String, sequence: Int, index: Int)

        init?(_ url: String) {
            let components = url.split(separator: "/", omittingEmptySubsequences: false)
            guard components.count >= 4, components[0].isEmpty, components[1] == StreamLayout.streamsFolder, !components[2].isEmpty else { return nil }
            let id = String(components[2])
            if components.count == 4 && components[3] == StreamLayout.playlist {
                self = .playlist(id: id)
                return
            }
            guard components.count == 5, let (sequence, index) = StreamLayout.partNumbers(components[3...].joined(separator: "/")) else {
                return nil
            }
            self = .part(id: id, sequence: sequence, index: index)
        }
    }

    enum LowLatencyAnswer {
        case reply(Reply)
        /// The connection is suspended; its handler is called again when it is resumed.
        case held
        /// Not a low-latency request, or not a live stream here: the file server answers
        /// (and a finished playlist ignores the directives, §6.2.5.2).
        case notMine
    }

    private enum Ready {
        case now(Reply)
        case later(LiveEdge.Wait)
    }

    /// Answers a low-latency request now, or suspends it with `Held` in `state`.
    func lowLatency(_ connection: OpaquePointer, url: String, held: Held?,
                    state: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> LowLatencyAnswer {
        guard let edge = liveEdge, let path = LowLatencyPath(url) else { return .notMine }
        let text = { (status: UInt32, message: String) in
            LowLatencyAnswer.reply(Reply(status: status, body: .bytes(Array((message + "\n").utf8)),
                                         headers: [("Content-Type", "text/plain"), ("Cache-Control", "no-cache")]))
        }
        if held?.timedOut == true { return text(503, "what was asked for has not come within three target durations") }
        let resumer = Resumer(Connection(pointer: connection))
        let wake: @Sendable () -> Void = { resumer.wake() }
        let id: String, directives: DeliveryDirectives, answer: Ready
        switch path {
        case .playlist(let stream):
            id = stream
            if let held {
                directives = held.directives
            } else {
                switch DeliveryDirectives.parse(argumentReader(connection)) {
                case .failure(let error): return edge.isLive(id) ? text(400, error.description) : .notMine
                case .success(let parsed): directives = parsed
                }
            }
            switch edge.playlist(id, directives, orWake: wake) {
            case .notLive: return .notMine
            case .badRequest(let message): return text(400, message)
            case .wait(let wait): answer = .later(wait)
            case .playlist(let body):
                // A blocking answer is one moment of the stream for good: caches may keep
                // it (six target durations, HLS_RULES L11); a plain reload is asked again.
                let cache = directives.msn == nil ? "no-cache" : "public, max-age=\(2 * edge.blockingLimitNanoseconds(id) / 1_000_000_000)"
                answer = .now(Reply(status: 200, body: .bytes(Array(body.utf8)),
                                        headers: [("Content-Type", "application/vnd.apple.mpegurl"), ("Cache-Control", cache)]))
            }
        case .part(let stream, let sequence, let index):
            id = stream
            directives = DeliveryDirectives()
            switch edge.part(id, sequence: sequence, index: index, orWake: wake) {
            case .notFound: return text(404, "no such part")
            case .wait(let wait): answer = .later(wait)
            case .part(let bytes, let captured):
                // When its last frame was captured, on CLOCK_MONOTONIC: a client on the
                // board (make bench) can tell how long the part took to be served.
                answer = .now(Reply(status: 200, body: .bytes(bytes),
                                    headers: [("Content-Type", "video/mp4"), ("Cache-Control", "public, max-age=60"),
                                              ("X-Onair-Captured-Ns", String(captured))]))
            }
        }
        switch answer {
        case .now(let reply): return .reply(reply)
        case .later(let wait):
            return hold(connection, until: wait, held: held ?? Held(directives: directives, deadline: monotonicNanoseconds() + edge.blockingLimitNanoseconds(id)),
                        edge: edge, resumer: resumer, state: state)
        }
    }

    /// Suspends a request until the edge wakes it (what it asked for has come) or its
    /// deadline passes (a 503 then); refused at once when the server is stopping or holds
    /// as many requests as it may.
    private func hold(_ connection: OpaquePointer, until wait: LiveEdge.Wait, held kept: Held, edge: LiveEdge, resumer: Resumer,
                      state: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> LowLatencyAnswer {
        guard holding(connection) else {
            _ = edge.cancel(wait)
            return .reply(Reply(status: 503, body: .bytes(Array("the server is stopping, or holds as many requests as it may\n".utf8)),
                                headers: [("Content-Type", "text/plain"), ("Cache-Control", "no-cache")]))
        }
        MHD_suspend_connection(connection)
        state.pointee = Unmanaged.passRetained(kept).toOpaque()
        let timer = heldTimer.schedule("held", at: kept.deadline) { _ in
            // Cancelled here means the edge will not wake it: this resumes it, to a 503.
            if edge.cancel(wait) {
                kept.timedOut = true
                resumer.wake()
            }
            return nil
        }
        resumer.suspended(timer: (heldTimer, timer))
        return .held
    }

    /// Resumes a suspended connection once, after both its suspension and a wake (from
    /// the edge or the deadline), in whichever order they come: the edge may wake it on
    /// another thread before this one has suspended it.
    /// Its deadline's timer is cancelled on resumption, so the timer holds only the
    /// requests held now, not every one of the last three target durations.
    final class Resumer: Sendable {
        private struct State {
            var suspended = false, woken = false, resumed = false
            var timer: (Scheduler, Scheduler.Task)?
        }
        private let connection: Connection
        private let state = Locked(State())
        init(_ connection: Connection) { self.connection = connection }
        func wake() { update { $0.woken = true } }
        func suspended(timer: (Scheduler, Scheduler.Task)) {
            update { $0.timer = timer; $0.suspended = true }
        }
        private func update(_ change: (inout State) -> Void) {
            let resume = state.withLock { state -> (Scheduler, Scheduler.Task)?? in
                change(&state)
                guard state.suspended && state.woken && !state.resumed else { return nil }
                state.resumed = true
                return .some(state.timer)
            }
            guard let resume else { return }
            if let (scheduler, task) = resume { scheduler.cancel(task) }
            MHD_resume_connection(connection.pointer)
        }
    }
}
