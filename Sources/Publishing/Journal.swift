import Files
import Layout
import System

/// What the destination has confirmed of one stream, kept beside it as `.published`, so a
/// restart resumes instead of starting over. Rewritten atomically, without fsync: losing
/// it only means uploading again, and PUTs are idempotent. A ladder's renditions each
/// have their own counts, in the order of the stream's renditions (`segments=12,12,13`).
public struct Journal: Equatable, Sendable {
    public var destination: String
    public var confirmedSegments: [Int]
    public var listed: [Int]
    public var endlist: Bool

    public init(destination: String, confirmedSegments: [Int], listed: [Int], endlist: Bool) {
        self.destination = destination
        self.confirmedSegments = confirmedSegments
        self.listed = listed
        self.endlist = endlist
    }

    /// A stream of one rendition.
    public init(destination: String, confirmedSegments: Int, listed: Int, endlist: Bool) {
        self.init(destination: destination, confirmedSegments: [confirmedSegments], listed: [listed], endlist: endlist)
    }

    /// What every playlist of the stream lists at least.
    public var visible: Int { listed.min() ?? 0 }

    public static func path(_ directory: String) -> String { directory + "/" + StreamLayout.journal }

    public static func read(_ directory: String, destination: String) -> Journal? {
        guard let data = FileSystem.read(path(directory)) else { return nil }
        var values: [String: String] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { values[String(parts[0])] = String(parts[1]) }
        }
        func counts(_ key: String) -> [Int]? {
            guard let text = values[key] else { return nil }
            let numbers = text.split(separator: ",").compactMap { Int($0) }
            return numbers.isEmpty || numbers.count != text.split(separator: ",").count ? nil : numbers
        }
        // A journal of another destination says nothing about this one.
        guard values["destination"] == destination, let segments = counts("segments"), let listed = counts("listed") else { return nil }
        return Journal(destination: destination, confirmedSegments: segments, listed: listed, endlist: values["endlist"] == "1")
    }

    public func write(_ directory: String) throws {
        func counts(_ numbers: [Int]) -> String { numbers.map(String.init).joined(separator: ",") }
        let text = "destination=\(destination)\nsegments=\(counts(confirmedSegments))\nlisted=\(counts(listed))\nendlist=\(endlist ? 1 : 0)\n"
        let temporary = directory + "/" + StreamLayout.temporary(StreamLayout.journal)
        try FileSystem.write(Array(text.utf8), to: temporary)
        try FileError.at(Self.path(directory), "rename to") { try Path.rename(temporary, to: Self.path(directory)) }
    }
}
