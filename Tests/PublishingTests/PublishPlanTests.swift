import TestSupport
import XCTest
@testable import Publishing

final class PublishPlanTests: XCTestCase {
    let retry = RetryPolicy()

    func testInitAndMultivariantComeBeforeTheFirstPlaylist() {
        var plan = PublishPlan(id: "s", retry: retry)
        XCTAssertEqual(plan.start(now: 0, segmentSlots: 2), [.initSegment("")])
        plan.segmentStored(1)
        XCTAssertEqual(plan.start(now: 0, segmentSlots: 2), [.segment(1)], "a segment may go up beside init")
        plan.finish(.segment(1), succeeded: true, now: 1, jitter: 0)
        XCTAssertEqual(plan.start(now: 1, segmentSlots: 2), [], "no playlist while init is in flight")
        plan.finish(.initSegment(""), succeeded: true, now: 2, jitter: 0)
        XCTAssertEqual(plan.start(now: 2, segmentSlots: 2), [.multivariant(version: 1)])
        XCTAssertEqual(plan.start(now: 2, segmentSlots: 2), [])
        plan.finish(.multivariant(version: 1), succeeded: true, now: 3, jitter: 0)
        XCTAssertEqual(plan.start(now: 3, segmentSlots: 2), [.playlist("playlist.m3u8", count: 1, ended: false)])
    }

    func ready(segments: Int) -> PublishPlan {
        var plan = PublishPlan(id: "s", retry: retry)
        _ = plan.start(now: 0, segmentSlots: 0)
        plan.finish(.initSegment(""), succeeded: true, now: 0, jitter: 0)
        _ = plan.start(now: 0, segmentSlots: 0)
        plan.finish(.multivariant(version: 1), succeeded: true, now: 0, jitter: 0)
        for n in stride(from: 1, through: segments, by: 1) { plan.segmentStored(n) }
        return plan
    }

    func testListsOnlyTheContiguousConfirmedRun() {
        var plan = ready(segments: 5)
        XCTAssertEqual(plan.start(now: 0, segmentSlots: 2), [.segment(1), .segment(2)], "in order, within the slots")
        XCTAssertEqual(plan.start(now: 0, segmentSlots: 3), [.segment(3), .segment(4), .segment(5)])
        for n in [1, 2, 3, 5] { plan.finish(.segment(n), succeeded: true, now: 10, jitter: 0) }
        plan.finish(.segment(4), succeeded: false, now: 10, jitter: 0)
        XCTAssertEqual(plan.start(now: 10, segmentSlots: 2), [.playlist("playlist.m3u8", count: 3, ended: false)], "5 is up, but 4 is not")
        plan.finish(.playlist("playlist.m3u8", count: 3, ended: false), succeeded: true, now: 11, jitter: 0)
        XCTAssertEqual(plan.retryState(of: .segment(4)).failures, 1)
        XCTAssertEqual(plan.retryState(of: .segment(4)).notBefore, 260)
        XCTAssertEqual(plan.start(now: 259, segmentSlots: 2), [], "4 waits its 250 ms")
        XCTAssertEqual(plan.start(now: 260, segmentSlots: 2), [.segment(4)])
        plan.finish(.segment(4), succeeded: true, now: 261, jitter: 0)
        XCTAssertEqual(plan.start(now: 261, segmentSlots: 2), [.playlist("playlist.m3u8", count: 5, ended: false)], "then jumps to 5")
    }

    func testEndlistOnlyAfterEverySegmentIsConfirmed() {
        var plan = ready(segments: 2)
        plan.ended()
        _ = plan.start(now: 0, segmentSlots: 2)
        plan.finish(.segment(2), succeeded: true, now: 0, jitter: 0)
        plan.finish(.segment(1), succeeded: false, now: 0, jitter: 0)
        XCTAssertEqual(plan.start(now: 0, segmentSlots: 2), [])
        XCTAssertEqual(plan.start(now: 250, segmentSlots: 2), [.segment(1)])
        plan.finish(.segment(1), succeeded: true, now: 251, jitter: 0)
        XCTAssertEqual(plan.start(now: 251, segmentSlots: 2), [.playlist("playlist.m3u8", count: 2, ended: true)])
        XCTAssertFalse(plan.isComplete)
        plan.finish(.playlist("playlist.m3u8", count: 2, ended: true), succeeded: true, now: 252, jitter: 0)
        XCTAssertTrue(plan.isComplete)
        XCTAssertEqual(plan.start(now: 252, segmentSlots: 2), [])
    }

    func testARaisedBandwidthGoesUpBeforeTheNextPlaylist() {
        var plan = ready(segments: 1)
        _ = plan.start(now: 0, segmentSlots: 2)
        plan.finish(.segment(1), succeeded: true, now: 0, jitter: 0)
        plan.multivariantChanged()
        XCTAssertEqual(plan.start(now: 0, segmentSlots: 2), [.multivariant(version: 2)])
        plan.finish(.multivariant(version: 2), succeeded: true, now: 0, jitter: 0)
        XCTAssertEqual(plan.start(now: 0, segmentSlots: 2), [.playlist("playlist.m3u8", count: 1, ended: false)])
    }

    func testRetryDelays() {
        let policy = RetryPolicy(quickMilliseconds: [250, 500], maximumMilliseconds: 30_000)
        XCTAssertEqual(policy.delayMilliseconds(afterFailures: 1, jitter: 0.9), 250)
        XCTAssertEqual(policy.delayMilliseconds(afterFailures: 2, jitter: 0.9), 500)
        XCTAssertEqual(policy.delayMilliseconds(afterFailures: 3, jitter: 0), 500, "half of 1000, plus jitter")
        XCTAssertEqual(policy.delayMilliseconds(afterFailures: 3, jitter: 0.5), 750)
        XCTAssertEqual(policy.delayMilliseconds(afterFailures: 4, jitter: 0), 1000)
        XCTAssertEqual(policy.delayMilliseconds(afterFailures: 50, jitter: 0), 15_000)
        XCTAssertLessThan(policy.delayMilliseconds(afterFailures: 50, jitter: 0.999_999), 30_000)
    }

    /// Random failures, random completion order, a ladder of two renditions (a rung with
    /// its I-frame playlist, and the sound, whose segments may lag): at every step no
    /// playlist on the origin lists a segment of its rendition the origin lacks, or
    /// shrinks, and the stream always completes.
    func testInvariantsUnderRandomFailures() {
        let renditions = [(folder: "v0", playlists: ["v0/playlist.m3u8", "v0/iframes.m3u8"]), (folder: "audio", playlists: ["audio/playlist.m3u8"])]
        let names = renditions.flatMap(\.playlists)
        func folder(_ playlist: String) -> String { String(playlist.prefix { $0 != "/" }) }
        for seed in 1...200 {
            var rng = SplitMix(seed: UInt64(seed))
            var plan = PublishPlan(id: "s", retry: RetryPolicy(quickMilliseconds: [1, 2], maximumMilliseconds: 16), renditions: renditions)
            var onOrigin = Set<String>(), initsUp = Set<String>(), multivariantUp = 0, listedOnOrigin: [String: Int] = [:], ended = Set<String>()
            var inFlight: [PublishPlan.Job] = []
            var now: Int64 = 0
            var stored = ["v0": 0, "audio": 0]
            for _ in 0..<8000 {
                for name in ["v0", "audio"] where stored[name]! < 12 && rng.next() % 5 == 0 {
                    stored[name]! += 1
                    plan.segmentStored(stored[name]!, in: name)
                }
                if stored.values.allSatisfy({ $0 == 12 }) && !plan.localEnded && rng.next() % 8 == 0 { plan.ended() }
                if rng.next() % 10 == 0 { plan.multivariantChanged() }
                let slots = 2 - inFlight.filter { if case .segment = $0 { return true } else { return false } }.count
                for job in plan.start(now: now, segmentSlots: slots) {
                    if case .playlist(let name, let count, let ending) = job {
                        XCTAssertTrue(initsUp == ["v0", "audio"] && multivariantUp > 0, "seed \(seed): playlist before init/index")
                        XCTAssertTrue((1...max(1, count)).allSatisfy { count == 0 || onOrigin.contains("\(folder(name))/\($0)") },
                                      "seed \(seed): \(name) lists a missing segment")
                        XCTAssertGreaterThanOrEqual(count, listedOnOrigin[name, default: 0], "seed \(seed): \(name) shrinks")
                        if ending { XCTAssertEqual(count, 12) }
                    }
                    inFlight.append(job)
                }
                guard !inFlight.isEmpty else { now += 1; if plan.isComplete { break }; continue }
                let job = inFlight.remove(at: Int(rng.next() % UInt64(inFlight.count)))
                let ok = rng.next() % 3 != 0
                if ok {
                    switch job {
                    case .initSegment(let name): initsUp.insert(name)
                    case .segment(let n, let name): onOrigin.insert("\(name)/\(n)")
                    case .multivariant(let v): multivariantUp = max(multivariantUp, v)
                    case .playlist(let name, let count, let ending):
                        let after = plan.afterConfirming(job)
                        listedOnOrigin[name] = max(listedOnOrigin[name, default: 0], count)
                        if ending { ended.insert(name) }
                        XCTAssertEqual(after.listed, renditions.map { $0.playlists.map { listedOnOrigin[$0, default: 0] }.min()! },
                                       "seed \(seed): the journal's counts")
                        XCTAssertEqual(after.endlist, ended.count == names.count)
                    }
                }
                plan.finish(job, succeeded: ok, now: now, jitter: Double(rng.next() % 1000) / 1000)
                now += Int64(rng.next() % 3)
                if plan.isComplete { break }
            }
            XCTAssertTrue(plan.isComplete, "seed \(seed) did not finish")
            XCTAssertEqual(ended, Set(names))
            XCTAssertEqual(onOrigin, Set((1...12).flatMap { ["v0/\($0)", "audio/\($0)"] }))
            XCTAssertEqual(plan.listed, 12)
        }
    }

    func testAJournalResumesEachRenditionWhereItWas() {
        var plan = PublishPlan(id: "s", retry: retry, renditions: [("v0", ["v0/playlist.m3u8"]), ("audio", ["audio/playlist.m3u8"])])
        for n in 1...4 { plan.segmentStored(n, in: "v0"); plan.segmentStored(n, in: "audio") }
        plan.ended()
        plan.restore(confirmedSegments: [4, 2], listed: [4, 2], endlist: false)
        XCTAssertEqual(plan.start(now: 0, segmentSlots: 4), [.segment(3, in: "audio"), .segment(4, in: "audio"),
                                                             .playlist("v0/playlist.m3u8", count: 4, ended: true)],
                       "only what the sound lacks, and the rung's ENDLIST; the inits and index.m3u8 are up")
        plan.finish(.segment(3, in: "audio"), succeeded: true, now: 0, jitter: 0)
        plan.finish(.segment(4, in: "audio"), succeeded: true, now: 0, jitter: 0)
        XCTAssertEqual(plan.start(now: 0, segmentSlots: 4), [.playlist("audio/playlist.m3u8", count: 4, ended: true)])
    }
}

/// What a drain waits for of devices.json: the board's entry saying what it should, and a
/// confirming write once that write has failed (another board's may have landed), or when
/// the board is off air (what devices.json keeps saying of it once it has stopped).
final class SiteUploadsTests: XCTestCase {
    func testADrainWaitsForTheConfirmingWriteOfDevicesJSONWhenItMatters() {
        var site = SiteUploads(files: [:], hasFolder: true)
        XCTAssertTrue(site.fleetPending(isLive: true), "not written yet")
        XCTAssertTrue(site.fleet.start(now: 0))
        // Written, saying the board is live; a confirming write is due in a few seconds.
        site.fleet.succeeded()
        site.fleetLive = true
        site.fleetConfirming = true
        site.fleet.again(now: 0, after: 3000)
        XCTAssertFalse(site.fleetPending(isLive: true), "a live board's confirming write is not waited for")
        XCTAssertTrue(site.fleetPending(isLive: false), "the board went off air since")
        // The confirming write fails: devices.json may say anything of this board now.
        XCTAssertTrue(site.fleet.start(now: 3000))
        site.fleet.failed(now: 3000, retry: RetryPolicy(), jitter: 0)
        XCTAssertTrue(site.fleetPending(isLive: true))
        XCTAssertTrue(site.fleet.start(now: 3250))
        site.fleet.succeeded()
        site.fleetConfirming = false
        XCTAssertFalse(site.fleetPending(isLive: true))

        // Off air: written, and the confirming write waited for — a board's last word.
        var ended = SiteUploads(files: [:], hasFolder: true)
        XCTAssertTrue(ended.fleet.start(now: 0))
        ended.fleet.succeeded()
        ended.fleetLive = false
        ended.fleetConfirming = true
        ended.fleet.again(now: 0, after: 3000)
        XCTAssertTrue(ended.fleetPending(isLive: false), "off air, the confirming write is waited for")
        XCTAssertTrue(ended.fleet.start(now: 3000))
        ended.fleet.succeeded()
        ended.fleetConfirming = false
        XCTAssertFalse(ended.fleetPending(isLive: false))
    }
}
