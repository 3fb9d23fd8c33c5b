import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Transitional, and all in this file but for the `isLocalQuery` checks that name it: the ``Outbox`` still asks its
// client for the configuration's rules with a request that never leaves the process. Once the outbox takes those
// rules explicitly (issue 38, branch outbox-38), this file goes, with every `isLocalQuery` line.

/// The response kind of a request that never leaves the process: the client at the bottom of a stack answers it with
/// what a component above the stack needs of its configuration before it sends anything (the ``Outbox`` encodes and
/// checks entries at enqueue). Decorators pass it through untouched; a test double of your own may throw for it, and
/// the asking component then uses its defaults.
struct ClientFacts: Decodable, Sendable {
    /// Lowercased names of the configuration's sensitive header fields.
    var sensitiveHeaders: Set<String>
    /// The configuration's default encoder and decoder.
    var encoder: JSONEncoder
    var decoder: JSONDecoder

    init(sensitiveHeaders: Set<String>, encoder: JSONEncoder, decoder: JSONDecoder) {
        self.sensitiveHeaders = sensitiveHeaders
        self.encoder = encoder
        self.decoder = decoder
    }

    /// Never decoded from a body: a client that tries fails, and the asker uses its defaults.
    init(from decoder: any Decoder) throws {
        throw DecodingError.dataCorrupted(
            DecodingError.Context(codingPath: [], debugDescription: "ClientFacts are answered, never decoded."))
    }

    /// The request that asks for them.
    static var request: NetworkRequest<VoidRequest, ClientFacts> {
        NetworkRequest(
            method: .get, options: RequestOptions(allowsSharing: false, sendsCredential: false, allowsRetry: false))
    }

    /// Asks `client` for the facts of the client at the bottom of its stack; `nil` if it cannot answer.
    static func of(_ client: any NetworkClientProtocol) async -> ClientFacts? {
        try? await client.run(request).value
    }

    /// The answer of a client at the bottom, as a response of the asking request's type.
    static func answer<ResponseModel>(
        _ facts: ClientFacts, base: URL
    ) throws -> NetworkResponse<ResponseModel> {
        let response = HTTPURLResponse(url: base, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:])
        guard let facts = facts as? ResponseModel, let response else {
            throw NetworkClientError.invalidRequest(reason: "the client facts could not be answered")
        }
        return NetworkResponse(value: facts, response: response)
    }
}

/// The answer to a ``ClientFacts`` query is never decoded from a body.
extension ClientFacts: ResponseKind {
    static func decoded(from data: Data, decoder: JSONDecoder) throws(NetworkClientError) -> ClientFacts {
        throw .invalidRequest(reason: "client facts are answered by the client at the bottom of a stack")
    }
}

extension NetworkRequest {
    /// Whether this request never leaves the process (``ClientFacts``): decorators pass it straight through.
    var isLocalQuery: Bool { ResponseModel.self == ClientFacts.self }
}

extension NetworkClient {
    /// Answers a ``ClientFacts`` query from the configuration, without sending anything.
    func answerFacts<ResponseModel>() throws -> NetworkResponse<ResponseModel> {
        try ClientFacts.answer(
            ClientFacts(
                sensitiveHeaders: configuration.sensitiveHeaders, encoder: configuration.defaultEncoder,
                decoder: configuration.defaultDecoder),
            base: configuration.baseURL)
    }
}

extension StubNetworkClient {
    /// Answers a ``ClientFacts`` query (from an ``Outbox``) with the stub's coders.
    func answerFacts<ResponseModel>() throws -> NetworkResponse<ResponseModel> {
        try ClientFacts.answer(
            ClientFacts(sensitiveHeaders: Redaction.alwaysSensitiveHeaders, encoder: encoder, decoder: decoder),
            base: baseURL)
    }
}
