import Courier
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The baseline: what an app does without a library. `URLSession.data(for:)`, a status check and a `JSONDecoder`
/// (and `JSONEncoder`) created once; the URL is built per request from a string with `URL(string:)`.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct RawCalls: Sendable {
    let session: URLSession
    /// The base URL without a trailing slash.
    let base: String
    let decoder = JSONDecoder()
    let encoder = JSONEncoder()
    /// An `Authorization` value sent with every small GET, as the resilient stack's authenticator does; none by
    /// default.
    var authorization: String?

    /// GETs `/small.json?i=<index>` with `Accept: application/json`, the same request on the wire as Courier's, and
    /// decodes a ``SmallItem``.
    func small(_ index: Int) async throws {
        var request = URLRequest(url: try url("\(base)\(EndpointPath.small)?i=\(index)"))
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let authorization { request.setValue(authorization, forHTTPHeaderField: "Authorization") }
        _ = try decoder.decode(SmallItem.self, from: try await send(request))
    }

    /// GETs `/events?i=<index>` with `Accept: text/event-stream`, the same request as Courier's
    /// ``CourierCalls/event(_:)``, and decodes the one event's data as a ``SmallItem``.
    func event(_ index: Int) async throws {
        var request = URLRequest(url: try url("\(base)\(EndpointPath.events)?i=\(index)"))
        request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        let body = try await send(request)
        guard let line = body.split(separator: 0x0A).first, line.starts(with: Data("data: ".utf8)) else {
            throw BenchmarkError.badResponse("no event in \(body.count) bytes")
        }
        _ = try decoder.decode(SmallItem.self, from: Data(line.dropFirst(6)))
    }

    /// ``small(_:)`` without any header: for `--profile raw-no-accept`, to tell corelibs' cost of one header apart.
    func smallWithoutHeaders(_ index: Int) async throws {
        let request = URLRequest(url: try url("\(base)\(EndpointPath.small)?i=\(index)"))
        _ = try decoder.decode(SmallItem.self, from: try await send(request))
    }

    /// POSTs `body` as JSON to `/post` and decodes the ``SmallItem`` answer.
    func post(_ body: PostBody) async throws {
        var request = URLRequest(url: try url(base + EndpointPath.post))
        request.httpMethod = "POST"
        request.httpBody = try encoder.encode(body)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        _ = try decoder.decode(SmallItem.self, from: try await send(request))
    }

    /// GETs `/large.json` and decodes the array; returns its element count.
    @discardableResult
    func large() async throws -> Int {
        let request = URLRequest(url: try url(base + EndpointPath.large))
        return try decoder.decode([LargeItem].self, from: try await send(request)).count
    }

    private func url(_ text: String) throws -> URL {
        guard let url = URL(string: text) else { throw BenchmarkError.badResponse("invalid URL \(text)") }
        return url
    }

    private func send(_ request: URLRequest) async throws -> Data {
        let (data, response) = try await session.data(for: request)
        guard let status = (response as? HTTPURLResponse)?.statusCode, (200..<300).contains(status) else {
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            throw BenchmarkError.badResponse("status \(status) for \(request.url?.absoluteString ?? "?")")
        }
        return data
    }
}

/// The same requests through a Courier client: a typed ``NetworkRequest`` built per request and `run`.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct CourierCalls<Client: NetworkClientProtocol>: Sendable {
    let client: Client
    /// Headers added to every small GET; none by default.
    var headers: [String: String]?

    /// GETs `/small.json?i=<index>` and decodes a ``SmallItem``.
    func small(_ index: Int) async throws {
        let request = NetworkRequest<VoidRequest, SmallItem>(
            path: EndpointPath.small, method: .get, queryItems: [URLQueryItem(name: "i", value: String(index))],
            additionalHeaders: headers)
        _ = try await client.run(request)
    }

    /// Opens `/events?i=<index>` as ``ServerSentEvents``, reads its one event to the end, and decodes its data as a
    /// ``SmallItem``.
    func event(_ index: Int) async throws {
        let request = NetworkRequest<VoidRequest, ServerSentEvents>(
            path: EndpointPath.events, method: .get, queryItems: [URLQueryItem(name: "i", value: String(index))])
        for try await event in try await client.run(request).value {
            _ = try JSONDecoder().decode(SmallItem.self, from: Data(event.data.utf8))
        }
    }

    /// GETs `/cached.json` (fresh for a day): with a ``ResponseCache``, every call after the first is a fresh hit.
    func cached() async throws {
        _ = try await client.run(NetworkRequest<VoidRequest, SmallItem>(path: EndpointPath.cached, method: .get))
    }

    /// POSTs `body` as JSON to `/post` and decodes the ``SmallItem`` answer.
    func post(_ body: PostBody) async throws {
        let request = NetworkRequest<PostBody, SmallItem>(path: EndpointPath.post, method: .post, body: body)
        _ = try await client.run(request)
    }

    /// GETs `/large.json` and decodes the array; returns its element count.
    @discardableResult
    func large() async throws -> Int {
        let request = NetworkRequest<VoidRequest, [LargeItem]>(path: EndpointPath.large, method: .get)
        return try await client.run(request).value.count
    }

    /// GETs `/slow` and decodes a ``SmallItem``.
    func slow() async throws {
        _ = try await client.run(NetworkRequest<VoidRequest, SmallItem>(path: EndpointPath.slow, method: .get))
    }

    /// GETs `/slower?i=<index>` and decodes a ``SmallItem``: calls with the same index are identical.
    func slower(_ index: Int) async throws {
        _ = try await client.run(
            NetworkRequest<VoidRequest, SmallItem>(
                path: EndpointPath.slower, method: .get, queryItems: [URLQueryItem(name: "i", value: String(index))]))
    }
}

/// A count of requests, safe to bump from many tasks at once.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
actor RequestCounter {
    private(set) var count = 0

    /// Adds one.
    func increment() {
        count += 1
    }
}

/// A decorator that counts the calls reaching the wrapped client: with ``DeduplicatingClient`` on top, the number
/// of requests that really went to the server, even when the server is external and cannot tell.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct CountingClient<Wrapped: NetworkClientProtocol>: NetworkClientProtocol {
    let wrapped: Wrapped
    let counter = RequestCounter()

    func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        await counter.increment()
        return try await wrapped.run(networkRequest)
    }
}
