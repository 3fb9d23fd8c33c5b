import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A decorator that runs requests through the wrapped client one at a time, in the order ``run(_:)`` was called.
///
/// Request B, called after A, starts only after A has finished, successfully or not; a failure never stalls the
/// queue. Cancelling a call that is still waiting removes it at once, and it is never sent; cancelling the running
/// call cancels its transfer and the queue moves on.
///
/// With ``Policy/concurrentReads``, `GET`, `HEAD` and `OPTIONS` requests run concurrently with each other, and every
/// other request is a barrier: it waits for everything called before it, and everything called after it waits for it.
public final class SequentialClient: NetworkClientProtocol {
    /// Which requests may run at the same time as each other.
    public struct Policy: Sendable, Hashable {
        /// Requests with these methods run concurrently with each other; all others run alone, in call order.
        public let concurrentMethods: Set<HTTPMethod>

        /// Creates a policy.
        /// - Parameter concurrentMethods: The methods whose requests may overlap each other.
        public init(concurrentMethods: Set<HTTPMethod>) {
            self.concurrentMethods = concurrentMethods
        }

        /// Every request runs alone, in call order. The default.
        public static let strict = Policy(concurrentMethods: [])
        /// `GET`, `HEAD` and `OPTIONS` overlap each other; writes stay strictly ordered barriers.
        public static let concurrentReads = Policy(concurrentMethods: [.get, .head, .options])
    }

    /// The client that runs the requests.
    public let wrapped: any NetworkClientProtocol
    /// Which requests may overlap.
    public let policy: Policy

    private let queue = Locked(Queue())

    /// Creates a sequential client (``NetworkClientProtocol/sequential(policy:)``).
    init(_ client: any NetworkClientProtocol, policy: Policy) {
        self.wrapped = client
        self.policy = policy
    }

    /// The number of calls waiting for their turn or running: `0` once every call has finished.
    public var pendingCount: Int {
        queue.withLock { queue in
            // Started or cancelled waiters that have not suspended yet are counted as running, or not at all.
            queue.waiting.values.count { $0.status == .waiting } + queue.runningConcurrent
                + (queue.runningBarrier ? 1 : 0)
        }
    }

    /// Waits for this request's turn, then runs it through the wrapped client.
    ///
    /// - Throws: What the wrapped client throws; `CancellationError` if the task is cancelled while waiting, in
    ///   which case nothing was sent.
    public func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        let isBarrier = !policy.concurrentMethods.contains(networkRequest.method)
        try await waitForTurn(isBarrier: isBarrier)
        defer { release(isBarrier: isBarrier) }
        return try await wrapped.run(networkRequest)
    }

    private func waitForTurn(isBarrier: Bool) async throws {
        try Task.checkCancellation()
        let (ticket, started) = queue.withLock { queue -> (UInt64?, [CheckedContinuation<Void, any Error>]) in
            if queue.waiting.isEmpty && queue.canStart(isBarrier: isBarrier) {
                queue.start(isBarrier: isBarrier)
                return (nil, [])  // The queue is idle: no suspension at all.
            }
            let ticket = queue.enqueue(isBarrier: isBarrier)
            // The queue may hold only calls cancelled before they suspended: start what can start, this one too.
            return (ticket, queue.startWaiters())
        }
        for continuation in started { continuation.resume() }
        guard let ticket else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = queue.withLock { $0.attach(continuation, to: ticket) }
                switch outcome {
                case .waiting: break
                case .started: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            let (cancelled, started) = queue.withLock { queue in
                let cancelled = queue.cancel(ticket)
                return (cancelled, queue.startWaiters())
            }
            cancelled?.resume(throwing: CancellationError())
            for continuation in started { continuation.resume() }
        }
    }

    private func release(isBarrier: Bool) {
        let started = queue.withLock { queue in
            if isBarrier { queue.runningBarrier = false } else { queue.runningConcurrent -= 1 }
            return queue.startWaiters()
        }
        for continuation in started { continuation.resume() }
    }
}

extension SequentialClient {
    /// The FIFO of waiting calls and what is running. Only touched under the `Locked` lock.
    private struct Queue: Sendable {
        enum Status: Sendable {
            case waiting
            case started
            case cancelled
        }

        struct Waiter: Sendable {
            let isBarrier: Bool
            var status = Status.waiting
            /// `nil` until the caller has suspended.
            var continuation: CheckedContinuation<Void, any Error>?
        }

        var runningConcurrent = 0
        var runningBarrier = false
        /// Waiters by ticket: waiting ones, and started or cancelled ones whose caller has not suspended yet.
        var waiting: [UInt64: Waiter] = [:]
        /// Tickets in call order; cancelled and started ones are skipped and dropped.
        private var order: [UInt64] = []
        private var head = 0
        private var lastTicket: UInt64 = 0

        func canStart(isBarrier: Bool) -> Bool {
            isBarrier ? runningConcurrent == 0 && !runningBarrier : !runningBarrier
        }

        mutating func start(isBarrier: Bool) {
            if isBarrier { runningBarrier = true } else { runningConcurrent += 1 }
        }

        mutating func enqueue(isBarrier: Bool) -> UInt64 {
            lastTicket &+= 1
            waiting[lastTicket] = Waiter(isBarrier: isBarrier)
            order.append(lastTicket)
            return lastTicket
        }

        /// Records the suspended caller's continuation, or removes the waiter if its fate is already known.
        mutating func attach(_ continuation: CheckedContinuation<Void, any Error>, to ticket: UInt64) -> Status {
            let status = waiting[ticket]!.status
            if status == .waiting {
                waiting[ticket]!.continuation = continuation
            } else {
                waiting[ticket] = nil
            }
            return status
        }

        /// Removes a waiting call from the queue; returns its continuation to resume with `CancellationError`.
        mutating func cancel(_ ticket: UInt64) -> CheckedContinuation<Void, any Error>? {
            guard let waiter = waiting[ticket], waiter.status == .waiting else { return nil }  // Already started.
            guard let continuation = waiter.continuation else {
                waiting[ticket]!.status = .cancelled  // `attach` resumes it.
                return nil
            }
            waiting[ticket] = nil
            return continuation
        }

        /// Starts every call at the head of the queue that may start now; returns the continuations to resume.
        mutating func startWaiters() -> [CheckedContinuation<Void, any Error>] {
            var started: [CheckedContinuation<Void, any Error>] = []
            while head < order.count {
                let ticket = order[head]
                guard let waiter = waiting[ticket], waiter.status == .waiting else {
                    head += 1  // Cancelled: skip.
                    continue
                }
                guard canStart(isBarrier: waiter.isBarrier) else { break }
                start(isBarrier: waiter.isBarrier)
                head += 1
                if let continuation = waiter.continuation {
                    waiting[ticket] = nil
                    started.append(continuation)
                } else {
                    waiting[ticket]!.status = .started  // `attach` resumes it.
                }
            }
            if head > 64 && head * 2 > order.count {
                order.removeFirst(head)
                head = 0
            }
            return started
        }
    }
}

extension NetworkClientProtocol {
    /// Wraps this client so that identical requests in flight at the same time share one call: the one way to
    /// deduplicate (see ``DeduplicatingClient`` for what counts as identical).
    /// - Parameter sharedMethods: The methods whose requests may be shared; `[.get, .head]` by default. Only add
    ///   methods whose requests are safe to send once on behalf of several callers.
    /// - Returns: A ``DeduplicatingClient`` around this client; its ``DeduplicatingClient/inFlightCount`` tells the
    ///   calls in flight.
    public func deduplicated(sharing sharedMethods: Set<HTTPMethod> = [.get, .head]) -> DeduplicatingClient {
        DeduplicatingClient(self, sharing: sharedMethods)
    }

    /// Wraps this client so that requests run one at a time, in call order: the one way to queue them (see
    /// ``SequentialClient``).
    /// - Parameter policy: Which requests may overlap; ``SequentialClient/Policy/strict`` (none) by default.
    /// - Returns: A ``SequentialClient`` around this client; its ``SequentialClient/pendingCount`` tells the calls
    ///   waiting or running.
    public func sequential(policy: SequentialClient.Policy = .strict) -> SequentialClient {
        SequentialClient(self, policy: policy)
    }
}
