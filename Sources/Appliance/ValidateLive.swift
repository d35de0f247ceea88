import Fetch
import HLS
import Threading

/// `onair validate URL`: a live low-latency stream followed as a player follows it
/// (RFC 8216bis §6.3.8), each step checked against HLS_RULES §2 and §7.
extension Runner {
    static func validateLive(_ url: String, seconds: Int) -> Int32 {
        do {
            var validation = LiveValidation(url: url, getter: CurlGetter(limit: validateFileLimit))
            let report = try validation.run(seconds: seconds)
            // A rule broken in every reload is said once, where it was first seen.
            var said = Set<String>()
            for finding in report.findings where said.insert("\(finding.severity) \(finding.rule) \(finding.message)").inserted { print(finding) }
            let errors = report.findings.filter { $0.severity == .error }.count
            print("\(url): \(errors) errors, \(report.findings.count - errors) warnings "
                  + "(\(report.parts) parts and \(report.segments) segments compared over \(seconds) s)")
            return errors == 0 ? 0 : 1
        } catch {
            printError("onair: validate: \(error)")
            return 2
        }
    }
}

/// What following one stream found.
struct LiveValidation {
    let url: String
    let getter: Getter
    private(set) var findings: [Finding] = []
    private(set) var parts = 0
    private(set) var segments = 0

    init(url: String, getter: Getter) {
        self.url = url
        self.getter = getter
    }

    struct NotLowLatency: Error, CustomStringConvertible {
        var url: String
        var description: String { "\(url) has no EXT-X-PART-INF: not a low-latency playlist (a stored stream: onair validate DIR)" }
    }

    func text(_ url: String) throws -> String { String(decoding: try getter.get(url), as: UTF8.self) }

    mutating func check(_ playlist: String, _ location: String) {
        findings += LowLatencyChecker.checkPlaylist(playlist, path: location)
    }

    func error(_ rule: String, _ location: String, _ message: String) -> Finding {
        Finding(rule: rule, severity: .error, location: location, message: message)
    }

    /// Follows the hints for `seconds`, then compares the segments read whole.
    mutating func run(seconds: Int) throws -> LiveValidation {
        var media = url
        var playlist = try text(url)
        if let variant = ParsedPlaylist(text: playlist).variants.first {
            media = Fetcher.resolve(variant.uri, against: url)
            playlist = try text(media)
        }
        var snapshot = LowLatencyChecker.parse(playlist)
        guard snapshot.partTarget != nil else { throw NotLowLatency(url: media) }
        check(playlist, media)
        var read: [Int: [(part: LowLatencyChecker.Part, bytes: [UInt8])]] = [:]
        let deadline = monotonicNanoseconds() + Int64(seconds) * 1_000_000_000
        while monotonicNanoseconds() < deadline, !snapshot.isEnded, let hint = snapshot.hint {
            // The hinted part, held by the server until it is made (§6.2.6).
            let bytes: [UInt8]
            do { bytes = try getter.get(Fetcher.resolve(hint, against: media)) } catch {
                findings.append(self.error("LL8", hint, "the hinted part could not be read: \(error)"))
                break
            }
            // It is the next part after the last one listed (§6.3.8): ask for the playlist
            // that holds it.
            let inProgress = snapshot.lastSegment + 1
            let index = snapshot.parts.filter { $0.parent == inProgress }.count
            let reload = try text(media + (media.contains("?") ? "&" : "?") + "_HLS_msn=\(inProgress)&_HLS_part=\(index)")
            let location = "\(media) (_HLS_msn=\(inProgress)&_HLS_part=\(index))"
            check(reload, location)
            findings += ReloadChecker.check(previous: playlist, next: reload, path: location)
            let next = LowLatencyChecker.parse(reload)
            guard let part = next.parts.first(where: { $0.uri == hint }) else {
                findings.append(self.error("LL11", location, "the blocking reload does not list the hinted part \(hint) as the next part"))
                break
            }
            read[part.parent, default: []].append((part, bytes))
            parts += 1
            (playlist, snapshot) = (reload, next)
        }
        try compareSegments(read, playlist: playlist, media: media)
        refusesAPartWithoutASegment(media)
        return self
    }

    /// LL6 and LL7 for every complete segment whose listed parts were all read.
    mutating func compareSegments(_ read: [Int: [(part: LowLatencyChecker.Part, bytes: [UInt8])]], playlist: String, media: String) throws {
        let snapshot = LowLatencyChecker.parse(playlist)
        let parsed = ParsedPlaylist(text: playlist)
        let first = snapshot.lastSegment + 1 - parsed.segments.count
        for (parent, parts) in read.sorted(by: { $0.key < $1.key }) where parent <= snapshot.lastSegment {
            let listed = snapshot.parts.filter { $0.parent == parent }
            guard !listed.isEmpty, parts.map(\.part.uri) == listed.map(\.uri), listed.last?.endsParent == true else { continue }
            let uri = parsed.segments[parent - first].uri
            let segment = try getter.get(Fetcher.resolve(uri, against: media))
            findings += LowLatencyChecker.checkParts(parts, segment: segment, location: uri)
            segments += 1
        }
    }

    /// §6.2.5.2: `_HLS_part` without `_HLS_msn` MUST be a Bad Request.
    mutating func refusesAPartWithoutASegment(_ media: String) {
        let bad = media + (media.contains("?") ? "&" : "?") + "_HLS_part=0"
        do {
            _ = try getter.get(bad)
            findings.append(self.error("LL11", bad, "answered, not refused with 400"))
        } catch let failure as FetchError where failure.status == 400 {
        } catch {
            findings.append(self.error("LL11", bad, "\(error), not 400"))
        }
    }
}
