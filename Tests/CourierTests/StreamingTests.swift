import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

@Suite("Streaming responses through a real URLSession")
struct StreamingTests {
    typealias Bytes = NetworkRequest<VoidRequest, ByteStream>

    @Test("run returns at the head, and the chunks arrive as the server writes them")
    func returnsAtTheHead() async throws {
        let gate = Gate()
        let server = try LoopbackServer { _ in
            .writer { writer in
                writer.send("first")
                gate.wait()
                writer.send("second")
                return .finish
            }
        }
        let response = try await server.client().run(Bytes(path: "/raw", method: .get))
        #expect(response.statusCode == 200)
        var iterator = response.value.makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first == Data("first".utf8))
        gate.open()
        let second = try await iterator.next()
        #expect(second == Data("second".utf8))
        let end = try await iterator.next()
        #expect(end == nil)
    }
}
