import Courier

// A small example SDK, written the way SDKs on Courier are written: models, a factory of requests, and a client
// factory that hands out `any NetworkClientProtocol`.

/// A to-do item.
struct Todo: Codable, Sendable, Equatable {
    let id: Int
    let title: String
    let done: Bool
}

/// The error payload the example API sends with every 4xx and 5xx.
struct APIError: Codable, Sendable, Equatable {
    let code: String
    let message: String
}

/// The example API's counters, so the example can show what really reached the server.
struct ServerStats: Codable, Sendable {
    /// How many `GET /summary` requests reached the server.
    let summaryRequests: Int
}

/// `GET /summary`: a slow endpoint, worth deduplicating.
struct Summary: Codable, Sendable, Equatable {
    let open: Int
    let done: Int
}

/// One entry of the journal, an endpoint that records the order in which writes arrive.
struct JournalEntry: Codable, Sendable, Equatable {
    let sequence: Int
}

/// What `GET /journal` returns: the entries in arrival order, and the most writes the server saw at once.
struct Journal: Codable, Sendable {
    let entries: [Int]
    let maxConcurrentWrites: Int
}

/// The requests of the example API.
enum TodoAPI {
    static func todo(id: Int) -> NetworkRequest<VoidRequest, Todo> {
        NetworkRequest(path: "/todos/\(id)", method: .get)
    }

    static func create(title: String) -> NetworkRequest<VoidRequest, Todo> {
        NetworkRequest(path: "/todos", method: .post, formItems: [URLFormItem(name: "title", value: title)])
    }

    static func summary() -> NetworkRequest<VoidRequest, Summary> {
        NetworkRequest(path: "/summary", method: .get)
    }

    static func stats() -> NetworkRequest<VoidRequest, ServerStats> {
        NetworkRequest(path: "/stats", method: .get)
    }

    static func clearJournal() -> NetworkRequest<VoidRequest, VoidResponse> {
        NetworkRequest(path: "/journal", method: .delete)
    }

    static func write(_ sequence: Int) -> NetworkRequest<JournalEntry, VoidResponse> {
        NetworkRequest(path: "/journal", method: .post, body: JournalEntry(sequence: sequence))
    }

    static func journal() -> NetworkRequest<VoidRequest, Journal> {
        NetworkRequest(path: "/journal", method: .get)
    }

    /// An endpoint that never answers: the example cancels it.
    static func hang() -> NetworkRequest<VoidRequest, VoidResponse> {
        NetworkRequest(path: "/hang", method: .get)
    }
}

/// Makes the SDK's client: a session Courier owns (the safe default), with a token on every request, kept to the
/// API's origin by `authenticated(by:)` (a static token: a 401 is sent again once with the same token, then is the
/// outcome).
enum TodoClientFactory {
    static func makeClient(baseURL: URL, token: String) -> any NetworkClientProtocol {
        let configuration = NetworkConfiguration(baseURL: baseURL)
        return NetworkClient(configuration: configuration)
            .authenticated(by: BearerTokenAuthenticator(token: { token }, refresh: { _ in token }))
    }
}
