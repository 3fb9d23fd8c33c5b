import Courier
import Foundation

// Written as a MicroClient 0.0.6 SDK (the MicroblogAPI wrapper's release): `parameters:` dictionaries built from
// optional values, a configuration from scheme and host name, a `location` of its own on URLResponse.

public struct Timeline: Decodable {
    public let items: [Entry]
}

public struct Entry: Decodable {
    public let id: String
    public let contentText: String
}

public struct Pagination {
    public let count: Int?
    public let sinceID: String?

    public init(count: Int? = nil, sinceID: String? = nil) {
        self.count = count
        self.sinceID = sinceID
    }

    var parameters: [String: String] {
        var parameters: [String: String] = [:]
        parameters["count"] = count.map { String($0) }
        parameters["since_id"] = sinceID
        return parameters
    }
}

public enum PostRequestFactory {
    public static func makeTimelineRequest(pagination: Pagination? = nil) -> NetworkRequest<VoidRequest, Timeline> {
        NetworkRequest(
            path: "/posts/timeline",
            method: .get,
            parameters: pagination?.parameters
        )
    }

    public static func makeFollowRequest(username: String) -> NetworkRequest<VoidRequest, VoidResponse> {
        NetworkRequest(
            path: "/users/follow",
            method: .post,
            parameters: ["username": username]
        )
    }

    public static func makeMicropubRequest(
        content: String,
        title: String?,
        isDraft: Bool
    ) -> NetworkRequest<VoidRequest, VoidResponse> {
        var parameters: [String: String?] = [:]
        parameters["h"] = "entry"
        parameters["content"] = content
        parameters["name"] = title
        parameters["post-status"] = isDraft ? "draft" : nil
        return NetworkRequest(
            path: "/micropub",
            method: .post,
            parameters: parameters,
            body: nil,
            decoder: nil,
            encoder: nil,
            additionalHeaders: ["X-Client": "old-line"]
        )
    }

    public static func makeBookmarksRequest() -> NetworkRequest<VoidRequest, Timeline> {
        NetworkRequest(path: "/posts/bookmarks", method: .get)
    }
}

public enum MicroAPIFactory {
    public static func makeConfiguration(token: @escaping () -> String) -> NetworkConfiguration {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let configuration = NetworkConfiguration(
            session: URLSession.shared,
            defaultDecoder: decoder,
            defaultEncoder: JSONEncoder(),
            scheme: "https",
            hostname: "micro.blog"
        )
        configuration.interceptor = { request in
            var newRequest = request
            newRequest.addValue("Bearer \(token())", forHTTPHeaderField: "Authorization")
            return newRequest
        }
        return configuration
    }

    public static func makeClient(configuration: NetworkConfiguration) -> NetworkClientProtocol {
        NetworkClient(configuration: configuration)
    }
}

// The SDK's own `location`, as MicroblogAPI declares it: Courier adds none, so there is no ambiguity.
extension URLResponse {
    public var location: URL? {
        (self as? HTTPURLResponse)?
            .value(forHTTPHeaderField: "Location")
            .flatMap(URL.init(string:))
    }
}

public func locationOfCreatedPost(_ response: URLResponse) -> URL? {
    response.location
}
