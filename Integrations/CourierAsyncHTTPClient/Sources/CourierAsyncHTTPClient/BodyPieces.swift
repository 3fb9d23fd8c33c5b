import Courier
import Foundation
import NIOCore
import NIOFoundationCompat

/// A request body as the `ByteBuffer`s AsyncHTTPClient streams, one piece each time it asks for more (after the last
/// went out): each piece starts the idle timeout's silence again and reports upload progress.
///
/// A file is read as it is sent (never all in memory), with Courier's checks: ``HTTPExchange/makeBodyStream()`` opens
/// the file when the upload starts, ends the stream with an error when the file changes size or Courier stops the
/// exchange.
struct BodyPieces: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    /// Where the bytes come from.
    enum Source: Sendable {
        /// These bytes, sent a piece at a time.
        case data(Data)
        /// The exchange's file body, of `byteCount` bytes.
        case file(byteCount: Int64)
    }

    let exchange: HTTPExchange
    let idle: IdleWatch
    let source: Source

    func makeAsyncIterator() -> Iterator {
        Iterator(pieces: self)
    }

    /// Reads the next piece on the task that AsyncHTTPClient iterates with.
    struct Iterator: AsyncIteratorProtocol {
        let pieces: BodyPieces
        private var stream: InputStream?
        private var opened = false
        private var total: Int64 = 0

        init(pieces: BodyPieces) {
            self.pieces = pieces
        }

        mutating func next() async throws -> ByteBuffer? {
            let piece: ByteBuffer?
            let byteCount: Int64
            switch pieces.source {
            case .data(let data):
                byteCount = Int64(data.count)
                piece = nextPiece(of: data)
            case .file(let count):
                byteCount = count
                piece = try nextPiece(ofFile: count)
            }
            guard let piece else { return nil }
            total += Int64(piece.readableBytes)
            pieces.idle.activity()
            pieces.exchange.sent(total, of: byteCount)
            return piece
        }

        private func nextPiece(of data: Data) -> ByteBuffer? {
            guard total < data.count else { return nil }
            let start = data.startIndex + Int(total)
            let end = data.index(
                start, offsetBy: Swift.min(AsyncHTTPClientTransport.bodyPieceSize, data.endIndex - start))
            return ByteBuffer(data: data[start..<end])
        }

        private mutating func nextPiece(ofFile byteCount: Int64) throws -> ByteBuffer? {
            if !opened {
                opened = true
                let opening = try pieces.exchange.makeBodyStream()
                opening.open()
                stream = opening
            }
            guard let stream else { return nil }
            guard total < byteCount else {
                stream.close()
                self.stream = nil
                return nil
            }
            let size = Int(Swift.min(Int64(AsyncHTTPClientTransport.bodyPieceSize), byteCount - total))
            var chunk = [UInt8](repeating: 0, count: size)
            let read = chunk.withUnsafeMutableBufferPointer { stream.read($0.baseAddress!, maxLength: $0.count) }
            guard read > 0 else {
                stream.close()
                self.stream = nil
                // The stream ends early when the file changed size or the exchange stopped: never a short body.
                throw stream.streamError ?? URLError(.cancelled)
            }
            return ByteBuffer(bytes: chunk[0..<read])
        }
    }
}
