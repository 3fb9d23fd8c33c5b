import Courier
import Foundation
import NIOCore
import NIOFoundationCompat

/// A file body's bytes as the `ByteBuffer`s AsyncHTTPClient streams, read as they are sent (never all in memory),
/// with Courier's checks: ``HTTPExchange/makeBodyStream()`` opens the file when the upload starts, ends the stream
/// with an error when the file changes size or Courier stops the exchange, and the exchange hears of the bytes sent.
struct FileBodyChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    /// The bytes read at a time: 64 KiB.
    static let chunkSize = 64 * 1024

    let exchange: HTTPExchange
    let byteCount: Int64

    func makeAsyncIterator() -> Iterator {
        Iterator(exchange: exchange, byteCount: byteCount)
    }

    /// Reads the file on the task that AsyncHTTPClient iterates with, one chunk at a time.
    struct Iterator: AsyncIteratorProtocol {
        let exchange: HTTPExchange
        let byteCount: Int64
        private var stream: InputStream?
        private var opened = false
        private var total: Int64 = 0

        init(exchange: HTTPExchange, byteCount: Int64) {
            self.exchange = exchange
            self.byteCount = byteCount
        }

        mutating func next() async throws -> ByteBuffer? {
            if !opened {
                opened = true
                let opening = try exchange.makeBodyStream()
                opening.open()
                stream = opening
            }
            guard let stream else { return nil }
            guard total < byteCount else {
                stream.close()
                self.stream = nil
                return nil
            }
            var chunk = [UInt8](repeating: 0, count: Int(Swift.min(Int64(FileBodyChunks.chunkSize), byteCount - total)))
            let read = chunk.withUnsafeMutableBufferPointer { stream.read($0.baseAddress!, maxLength: $0.count) }
            guard read > 0 else {
                stream.close()
                self.stream = nil
                // The stream ends early when the file changed size or the exchange stopped: never a short body.
                throw stream.streamError ?? URLError(.cancelled)
            }
            total += Int64(read)
            exchange.sent(total, of: byteCount)
            return ByteBuffer(bytes: chunk[0..<read])
        }
    }
}
