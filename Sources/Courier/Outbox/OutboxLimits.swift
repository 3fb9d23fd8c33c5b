import Foundation

extension Outbox {
    /// The bounds of an ``Outbox``.
    public struct Limits: Sendable {
        /// The most entries kept at once, waiting to be sent or for their handler; `10_000` by default.
        public var maximumEntries: Int
        /// The most bytes kept at once (stored requests and results); `64 MiB` by default.
        public var maximumBytes: Int
        /// The largest encoded body one entry may have; `4 MiB` by default.
        public var maximumBodySize: Int
        /// How long, in seconds, an entry may keep being retried after it was enqueued; `nil` (the default) for no
        /// limit. A retry that would start later fails the entry with its last error. An enqueue time later than
        /// the clock's (a clock that was ahead) counts as now, and within a process age is measured with a monotonic
        /// clock, so setting the wall clock neither stops nor speeds it.
        public var maximumAge: TimeInterval?
        /// How long, in seconds, a result waits for a handler of its kind before it is dropped; 7 days by default.
        public var resultRetention: TimeInterval
        /// How many ordering keys may send at the same time; `4` by default.
        public var maximumConcurrentSends: Int

        /// Creates limits; every parameter has the default described on its property.
        /// - Parameters:
        ///   - maximumEntries: The most entries kept; `10_000` by default.
        ///   - maximumBytes: The most bytes kept; 64 MiB by default.
        ///   - maximumBodySize: The largest body of one entry; 4 MiB by default.
        ///   - maximumAge: How long an entry may be retried, in seconds; `nil` (no limit) by default.
        ///   - resultRetention: How long a result waits for a handler, in seconds; 7 days by default.
        ///   - maximumConcurrentSends: How many ordering keys send at once; `4` by default.
        public init(
            maximumEntries: Int = 10_000,
            maximumBytes: Int = 64 * 1024 * 1024,
            maximumBodySize: Int = 4 * 1024 * 1024,
            maximumAge: TimeInterval? = nil,
            resultRetention: TimeInterval = 7 * 24 * 3600,
            maximumConcurrentSends: Int = 4
        ) {
            self.maximumEntries = max(1, maximumEntries)
            self.maximumBytes = max(1, maximumBytes)
            self.maximumBodySize = max(0, maximumBodySize)
            self.maximumAge = maximumAge
            self.resultRetention = resultRetention
            self.maximumConcurrentSends = max(1, maximumConcurrentSends)
        }
    }
}
