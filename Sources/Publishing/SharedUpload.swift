/// A file of the board's site that goes up again whenever it changes (its streams.json,
/// its entry in devices.json): one upload at a time, wanted again on a change or a
/// failure, never before `notBefore` (the retry policy's backoff after failures).
struct SharedUpload {
    var wanted = false
    private(set) var inFlight = false
    private(set) var failures = 0
    var notBefore: Int64 = 0

    /// Takes the upload if it is wanted (or `alsoDue`) and due: it is then in flight.
    mutating func start(now: Int64, alsoDue: Bool = false) -> Bool {
        guard (wanted || alsoDue) && !inFlight && notBefore <= now else { return false }
        wanted = false
        inFlight = true
        return true
    }

    mutating func succeeded() {
        inFlight = false
        failures = 0
    }

    /// Failed: wanted again after the policy's delay for this many failures in a row.
    mutating func failed(now: Int64, retry: RetryPolicy, jitter: Double) {
        inFlight = false
        wanted = true
        failures += 1
        notBefore = now + retry.delayMilliseconds(afterFailures: failures, jitter: jitter)
    }

    /// Wanted again `delay` ms from `now`, whatever came of this upload.
    mutating func again(now: Int64, after delay: Int64) {
        inFlight = false
        wanted = true
        notBefore = now + delay
    }

    /// Wanted or on its way.
    var pending: Bool { wanted || inFlight }
    /// When a worker should look again for it (if it is wanted).
    var due: Int64? { wanted && !inFlight ? notBefore : nil }
}
