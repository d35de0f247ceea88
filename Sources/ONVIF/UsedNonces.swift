import Access
import Files
import System
import Threading

/// The nonces of the WS-Security digests already taken (OASIS UsernameToken Profile
/// §3.1: a nonce is used once), so a captured request is refused when it comes again —
/// also after a restart: each is appended to a file (one line of 32 hex digits, the first
/// half of its SHA-256), read back at start. The last `capacity` are kept; the file is
/// rewritten with those when it holds twice as many. An append is one write(2) without
/// fsync: a restart keeps it (the page cache outlives onair); a power cut may lose the last
/// seconds', and a torn line is skipped.
final class UsedNonces: Sendable {
    private let state: Locked<State>
    let capacity: Int
    let path: String?

    private struct State {
        var set: Set<[UInt8]> = []
        var order: [[UInt8]] = []
        var lines = 0
        var file: FileDescriptor?
    }

    init(path: String?, capacity: Int = 4096) {
        self.path = path
        self.capacity = max(1, capacity)
        var state = State()
        if let path {
            let text = FileSystem.read(path, limit: 2 * capacity * 33 + 33).map { String(decoding: $0, as: UTF8.self) } ?? ""
            let lines = text.split(separator: "\n")
            for line in lines where line.utf8.count == 32 {
                guard let key = AccessList.unhex(String(line)), state.set.insert(key).inserted else { continue }
                state.order.append(key)
            }
            if state.order.count > capacity {
                for old in state.order.prefix(state.order.count - capacity) { state.set.remove(old) }
                state.order.removeFirst(state.order.count - capacity)
            }
            // The file's lines, not the nonces kept: the rewrite comes when the file holds
            // twice the capacity, so it never outgrows what is read back here.
            state.lines = lines.count
            state.file = try? FileDescriptor.open(path, .writeOnly, options: [.create, .append], permissions: 0o600)
            // A line torn by a power cut is ended, so the next one starts on its own.
            if !text.isEmpty && !text.hasSuffix("\n") { try? state.file?.writeAll(Array("\n".utf8)) }
        }
        self.state = Locked(state)
    }

    /// Whether `nonce` is new; then it is remembered (and written down).
    func first(_ nonce: [UInt8]) -> Bool {
        let key = Self.key(nonce)
        return state.withLock { state -> Bool in
            guard state.set.insert(key).inserted else { return false }
            state.order.append(key)
            if state.order.count > capacity { state.set.remove(state.order.removeFirst()) }
            write(key, &state)
            return true
        }
    }

    private func write(_ key: [UInt8], _ state: inout State) {
        guard let path else { return }
        state.lines += 1
        if state.lines > 2 * capacity {
            let text = state.order.map { AccessList.hex($0) + "\n" }.joined()
            try? AtomicFile.write(Array(text.utf8), to: path, permissions: 0o600)
            state.file = try? FileDescriptor.open(path, .writeOnly, options: [.append], permissions: 0o600)
            state.lines = state.order.count
            return
        }
        try? state.file?.writeAll(Array((AccessList.hex(key) + "\n").utf8))
    }

    static func key(_ nonce: [UInt8]) -> [UInt8] { Array(AccessList.hash(nonce, .sha256).prefix(16)) }
}
