import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Reading the server's error payload: one line from a caught error to a typed error model.

extension NetworkClientError {
    /// The status code of an ``unacceptableStatusCode(statusCode:response:data:)`` error; `nil` for other cases.
    public var statusCode: Int? {
        guard case .unacceptableStatusCode(let statusCode, _, _) = self else { return nil }
        return statusCode
    }

    /// The body of an ``unacceptableStatusCode(statusCode:response:data:)`` error decoded as JSON into `type`, or
    /// `nil` when this is another case or the body does not decode.
    ///
    /// ```swift
    /// } catch let error as NetworkClientError {
    ///     if let payload = error.errorBody(APIError.self) { print(payload.message) }
    /// }
    /// ```
    /// - Parameters:
    ///   - type: The server's error model.
    ///   - decoder: The decoder to use; a plain `JSONDecoder()` by default. Pass the request's or the
    ///     configuration's (``NetworkConfiguration/defaultDecoder``) to decode as the client does.
    /// - Returns: The decoded error model, or `nil`.
    public func errorBody<ErrorModel: Decodable>(
        _ type: ErrorModel.Type, decoder: JSONDecoder = JSONDecoder()
    ) -> ErrorModel? {
        try? decodedErrorBody(type, decoder: decoder)
    }

    /// The body of an ``unacceptableStatusCode(statusCode:response:data:)`` error decoded as JSON into `type`.
    /// - Throws: ``decodingFailed(underlying:data:)`` with the body when it does not decode; this error itself,
    ///   unchanged, when it is not ``unacceptableStatusCode(statusCode:response:data:)``.
    func decodedErrorBody<ErrorModel: Decodable>(
        _ type: ErrorModel.Type, decoder: JSONDecoder = JSONDecoder()
    ) throws(NetworkClientError) -> ErrorModel {
        guard case .unacceptableStatusCode(_, _, let body) = self else { throw self }
        let data = body ?? Data()
        if data.isEmpty {
            let context = DecodingError.Context(codingPath: [], debugDescription: "The error body is empty.")
            throw .decodingFailed(underlying: DecodingError.dataCorrupted(context), data: data)
        }
        do {
            return try decoder.decode(type, from: data)
        } catch {
            throw .decodingFailed(underlying: error, data: data)
        }
    }
}
