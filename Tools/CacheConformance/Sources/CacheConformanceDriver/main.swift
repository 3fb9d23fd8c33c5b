import Courier
import Foundation

// Reads one JSON request per line on standard input, runs it through a NetworkClient whose configuration has a
// ResponseCache, and writes one JSON answer per line on standard output (in completion order, matched by id).
//
// Usage: CacheConformanceDriver   (the requests carry absolute URLs)

struct Incoming: Decodable {
    let id: Int
    let method: String
    let url: String
    let headers: [[String]]
    let body: String?
}

struct Outgoing: Encodable {
    let id: Int
    let status: Int
    let headers: [[String]]
    let body: String
    let cacheStatus: String
}

/// Header fields a proxy does not forward (hop-by-hop), plus the ones URLSession sets itself.
let hopByHop: Set<String> = [
    "connection", "keep-alive", "transfer-encoding", "host", "content-length", "te", "trailer", "upgrade",
    "proxy-connection",
]

let output = NSLock()

func write(_ answer: Outgoing) {
    guard let data = try? JSONEncoder().encode(answer) else { return }
    output.lock()
    FileHandle.standardOutput.write(data + Data("\n".utf8))
    output.unlock()
}

@available(macOS 13.0, *)
func handle(_ incoming: Incoming, client: NetworkClient) async {
    guard let url = URL(string: incoming.url) else {
        return write(Outgoing(id: incoming.id, status: 400, headers: [], body: "", cacheStatus: "-"))
    }
    guard let method = HTTPMethod(rawValue: incoming.method) else {
        return write(Outgoing(id: incoming.id, status: 501, headers: [], body: "", cacheStatus: "-"))
    }
    var headers: [String: String] = [:]
    for pair in incoming.headers where pair.count == 2 && !hopByHop.contains(pair[0].lowercased()) {
        let name = pair[0]
        headers[name] = headers[name].map { $0 + ", " + pair[1] } ?? pair[1]
    }
    let body = incoming.body.flatMap { Data(base64Encoded: $0) }.flatMap { $0.isEmpty ? nil : $0 }
    let request = NetworkRequest<Data, Data>(
        method: method, body: body, baseURL: url, additionalHeaders: headers,
        acceptableStatusCodes: Set(100..<600))
    do {
        let response = try await client.run(request)
        let head = response.response as? HTTPURLResponse
        let fields = (head?.allHeaderFields ?? [:]).compactMap { key, value -> [String]? in
            guard let name = key as? String, let value = value as? String else { return nil }
            return [name, value]
        }
        write(
            Outgoing(
                id: incoming.id, status: response.statusCode, headers: fields,
                body: response.value.base64EncodedString(), cacheStatus: "\(response.cacheStatus)"))
    } catch {
        FileHandle.standardError.write(Data("request \(incoming.id) \(incoming.method) \(url): \(error)\n".utf8))
        write(Outgoing(id: incoming.id, status: 502, headers: [], body: "", cacheStatus: "error"))
    }
}

if #available(macOS 13.0, *) {
    let configuration = NetworkConfiguration(
        sessionConfiguration: .ephemeral, baseURL: URL(string: "http://localhost")!)
    configuration.responseCache = ResponseCache(memoryCapacity: 256 * 1024 * 1024)
    let client = NetworkClient(configuration: configuration)
    let decoder = JSONDecoder()
    while let line = readLine(strippingNewline: true) {
        guard let incoming = try? decoder.decode(Incoming.self, from: Data(line.utf8)) else { continue }
        Task.detached { await handle(incoming, client: client) }
    }
    // Standard input closed: let the requests in flight finish.
    Thread.sleep(forTimeInterval: 15)
}
