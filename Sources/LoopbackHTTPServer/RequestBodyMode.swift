import Foundation

/// How the server receives the body of a request: kept whole in ``ServerRequest/body`` (the default), or read and
/// thrown away as it arrives, for uploads too large to hold.
///
/// The mode is chosen per request, from its method and path, before the body is read:
///
/// ```swift
/// let server = try LoopbackServer(
///     requestBodyMode: { _, path in path == "/discard" ? .discard : .buffer },
///     handler: { request in .json(["received": request.discardedBody?.byteCount ?? 0]) })
/// ```
public enum RequestBodyMode: Sendable, Hashable {
    /// The body is received into ``ServerRequest/body`` (up to 1 GiB; a larger declared body gets a 413).
    case buffer
    /// The body is read and dropped piece by piece, so the server's memory stays flat whatever its size, and there is
    /// no size limit. ``ServerRequest/body`` is empty and ``ServerRequest/discardedBody`` tells its size and Adler-32.
    case discard
}

/// What the server saw of a body it discarded (``RequestBodyMode/discard``): enough to check that every byte arrived.
public struct DiscardedRequestBody: Sendable, Hashable, Codable {
    /// The body's size in bytes (after de-chunking).
    public let byteCount: Int
    /// The Adler-32 checksum (RFC 1950) of the body's bytes, as ``Adler32`` computes it.
    public let adler32: UInt32

    /// Creates a summary of a discarded body.
    /// - Parameters:
    ///   - byteCount: The body's size in bytes.
    ///   - adler32: The Adler-32 of its bytes.
    public init(byteCount: Int, adler32: UInt32) {
        self.byteCount = byteCount
        self.adler32 = adler32
    }
}

/// The Adler-32 checksum of RFC 1950 (zlib's), computed incrementally: cheap enough to run over every byte of a large
/// upload on the server's thread (about 1 byte per cycle), and able to tell missing or misplaced pieces.
public struct Adler32: Sendable, Hashable {
    private static let modulus: UInt32 = 65_521
    /// The most bytes that can be summed before the 32-bit sums must be reduced (zlib's `NMAX`).
    private static let blockSize = 5_552

    private var low: UInt32 = 1
    private var high: UInt32 = 0

    /// Starts a checksum over no bytes (its value is 1).
    public init() {}

    /// The checksum of the bytes given so far.
    public var value: UInt32 {
        high << 16 | low
    }

    /// Adds `bytes` to the checksum.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var low = self.low
        var high = self.high
        var index = 0
        while index < bytes.count {
            let blockEnd = min(bytes.count, index + Self.blockSize)
            while index < blockEnd {
                low &+= UInt32(bytes[index])
                high &+= low
                index += 1
            }
            low %= Self.modulus
            high %= Self.modulus
        }
        self.low = low
        self.high = high
    }

    /// Adds the bytes of `data` to the checksum.
    public mutating func update(_ data: Data) {
        data.withUnsafeBytes { update($0) }
    }

    /// The Adler-32 of `data`.
    public static func checksum(_ data: Data) -> UInt32 {
        var checksum = Adler32()
        checksum.update(data)
        return checksum.value
    }
}
