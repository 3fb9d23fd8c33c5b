import Foundation
import Testing

@testable import Courier

/// The reconnection policy as a state machine: what each ending leads to, without sockets or clocks.
@Suite("Reconnection schedule")
struct ReconnectionScheduleTests {
    private func schedule(maxAttempts: Int = 3, initialDelay: TimeInterval = 0) -> ReconnectionSchedule {
        var policy = StreamReconnection(maxAttempts: maxAttempts, initialDelay: initialDelay)
        // The top of the jitter's range, for exact waits.
        policy.environment.random = { $0.upperBound }
        return ReconnectionSchedule(policy: policy, openedAt: 100)
    }

    /// A connection that dispatched events (or none) and ended, the server's `retry` in force.
    private func dispatched(_ dispatched: Bool = true, retry: Int?) -> StreamResumption {
        StreamResumption(lastEventID: "", retry: retry, dispatched: dispatched)
    }

    @Test("retry: 0 is floored at minimumDelay")
    func floor() {
        var schedule = schedule()
        // Open for 2 s: a connection that worked.
        #expect(schedule.connectionEnded(at: 102, resumption: dispatched(retry: 0)) == .reconnect(after: 0.5))
        #expect(schedule.failures == 0)
    }

    @Test("A connection that dispatched events but ended at once, the server asking for less than the floor, fails")
    func shortConnectionFails() {
        var schedule = schedule()
        #expect(schedule.connectionEnded(at: 100.1, resumption: dispatched(retry: 0)) == .reconnect(after: 1))
        schedule.opened(at: 101)
        #expect(schedule.connectionEnded(at: 101, resumption: dispatched(retry: 100)) == .reconnect(after: 2))
        schedule.opened(at: 103)
        #expect(schedule.connectionEnded(at: 103.2, resumption: dispatched(retry: 0)) == .giveUp)
    }

    @Test("Its life and the wait the server asks for add up: at least the floor is a connection that worked")
    func lifeAndRetryAddUp() {
        var schedule = schedule()
        #expect(schedule.connectionEnded(at: 100.25, resumption: dispatched(retry: 250)) == .reconnect(after: 0.5))
        schedule.opened(at: 200)
        #expect(schedule.connectionEnded(at: 200, resumption: dispatched(retry: 500)) == .reconnect(after: 0.5))
        // Without retry, the initial delay is what is asked.
        var withInitial = self.schedule(initialDelay: 2)
        #expect(withInitial.connectionEnded(at: 100, resumption: dispatched(retry: nil)) == .reconnect(after: 2))
    }

    @Test("A connection that dispatched nothing fails, however long it was open; a working one starts the count again")
    func nothingDispatched() {
        var schedule = schedule()
        #expect(schedule.connectionEnded(at: 500, resumption: dispatched(false, retry: 1000)) == .reconnect(after: 2))
        schedule.opened(at: 600)
        #expect(schedule.openingFailed(retry: 1000) == .reconnect(after: 4))
        schedule.opened(at: 700)
        #expect(schedule.connectionEnded(at: 800, resumption: dispatched(retry: 1000)) == .reconnect(after: 1))
        #expect(schedule.failures == 0)
    }

    @Test("The doubling stops at maximumDelay; maxAttempts failures in a row give up")
    func ceilingAndGiveUp() {
        var schedule = schedule(maxAttempts: 4)
        #expect(schedule.openingFailed(retry: 40_000) == .reconnect(after: 60))
        #expect(schedule.openingFailed(retry: 40_000) == .reconnect(after: 60))
        #expect(schedule.openingFailed(retry: 40_000) == .reconnect(after: 60))
        #expect(schedule.openingFailed(retry: 40_000) == .giveUp)
    }
}
