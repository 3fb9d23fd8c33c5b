import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Outbox {
    /// The client's facts if they are known yet.
    var knownFacts: ClientFacts? {
        facts.withLock { state -> ClientFacts? in
            guard case .known(let known) = state else { return nil }
            return known
        }
    }

    /// Whether the client's facts are known, being asked for (once, for every concurrent enqueue), or not asked yet.
    enum FactsState: Sendable {
        case unknown
        case asking(SharedOutcome<ClientFacts?>)
        case known(ClientFacts?)
    }

    /// What the client at the bottom of the stack says of its configuration, asked once (``ClientFacts``): concurrent
    /// callers wait for the one question in flight.
    /// - Throws: `CancellationError` when the caller is cancelled while it waits.
    func clientFacts() async throws -> ClientFacts? {
        enum Next {
            case known(ClientFacts?)
            case wait(SharedOutcome<ClientFacts?>)
            case ask(SharedOutcome<ClientFacts?>)
        }
        let next = facts.withLock { state -> Next in
            switch state {
            case .known(let known): return .known(known)
            case .asking(let outcome): return .wait(outcome)
            case .unknown:
                let outcome = SharedOutcome<ClientFacts?>()
                state = .asking(outcome)
                return .ask(outcome)
            }
        }
        switch next {
        case .known(let known):
            return known
        case .wait(let outcome):
            return try await outcome.value(until: nil)
        case .ask(let outcome):
            // Unstructured, so that the asker's cancellation does not leave the others without an answer.
            let answer = await Task { [client] in
                await SendReportListener.$current.withValue(nil) { await ClientFacts.of(client) }
            }.value
            // A client that could not answer (offline, a gate that refuses everything) is asked again next time.
            facts.withLock { $0 = answer.map { .known($0) } ?? .unknown }
            outcome.finish(.success(answer))
            return answer
        }
    }
}
