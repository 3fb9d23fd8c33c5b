/// A response body produced piece by piece while it is sent, never held in memory: a prefix, then a pattern
/// repeated for `periodicLength` bytes, then a suffix.
struct GeneratedBody {
    /// Pieces handed to `send` are at most about this size.
    static let pieceSize = 64 * 1024

    let prefix: [UInt8]
    /// The repeating pattern, tiled to at least `pieceSize` bytes (a whole number of periods).
    private let tile: [UInt8]
    private let period: Int
    let periodicLength: Int
    let suffix: [UInt8]

    /// The total length in bytes.
    var count: Int {
        prefix.count + periodicLength + suffix.count
    }

    init(prefix: [UInt8] = [], pattern: [UInt8], periodicLength: Int, suffix: [UInt8] = []) {
        precondition(!pattern.isEmpty || periodicLength == 0, "GeneratedBody: an empty pattern cannot repeat")
        self.prefix = prefix
        self.period = max(1, pattern.count)
        var tile: [UInt8] = []
        if !pattern.isEmpty {
            let repeats = (Self.pieceSize + pattern.count - 1) / pattern.count
            tile.reserveCapacity(repeats * pattern.count)
            for _ in 0..<repeats { tile.append(contentsOf: pattern) }
        }
        self.tile = tile
        self.periodicLength = periodicLength
        self.suffix = suffix
    }

    /// `length` bytes where byte `i` is `UInt8((offset + i) % 251)` (a prime period, so that misplaced pieces show).
    static func counting(length: Int, offset: Int = 0) -> GeneratedBody {
        let phase = offset % 251
        return GeneratedBody(pattern: (0..<251).map { UInt8(($0 + phase) % 251) }, periodicLength: length)
    }

    /// Copies up to `capacity` bytes starting at `offset` into `destination`; returns how many were copied.
    func copy(into destination: UnsafeMutablePointer<UInt8>, capacity: Int, from offset: Int) -> Int {
        var written = 0
        var position = offset
        let periodicEnd = prefix.count + periodicLength
        while written < capacity && position < count {
            let room = capacity - written
            let taken: Int
            if position < prefix.count {
                taken = min(room, prefix.count - position)
                prefix.withUnsafeBufferPointer {
                    (destination + written).update(from: $0.baseAddress! + position, count: taken)
                }
            } else if position < periodicEnd {
                let phase = (position - prefix.count) % period
                taken = min(room, periodicEnd - position, tile.count - phase)
                tile.withUnsafeBufferPointer {
                    (destination + written).update(from: $0.baseAddress! + phase, count: taken)
                }
            } else {
                let start = position - periodicEnd
                taken = min(room, suffix.count - start)
                suffix.withUnsafeBufferPointer {
                    (destination + written).update(from: $0.baseAddress! + start, count: taken)
                }
            }
            written += taken
            position += taken
        }
        return written
    }
}

/// A gzip stream (RFC 1952) whose deflate data (RFC 1951) inflates to `expandedSize` zero bytes.
///
/// One final fixed-Huffman block: a literal 0, then `(expandedSize - 1) / 258` matches of length 258 at distance 1
/// (code 285, 8 bits, no extra bits; distance code 0, 5 bits), then the remainder as literal zeros and the end of
/// block. 13 bits per 258 bytes: about 158:1. The matches start byte-aligned after the first one (3 + 8 + 13 = 24
/// bits) and every 8 matches are exactly 13 bytes, so the middle of the stream is one 13-byte pattern repeated.
struct GzipZeros {
    let body: GeneratedBody

    var compressedSize: Int {
        body.count
    }

    init(expandedSize: Int) {
        precondition(expandedSize >= 0, "GzipZeros: negative size")
        let literals = expandedSize > 0 ? 1 : 0
        let matches = expandedSize > 0 ? (expandedSize - 1) / 258 : 0
        let remainder = expandedSize > 0 ? (expandedSize - 1) % 258 : 0

        // ID1 ID2, CM = deflate, no flags, no modification time, no extra flags, OS = unknown.
        var prefix: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF]
        var head = BitWriter()
        head.writeBits(1, count: 1)  // BFINAL
        head.writeBits(1, count: 2)  // BTYPE = 01, fixed Huffman codes
        if literals == 1 { head.writeLiteralZero() }
        var repeats = 0
        var tail = BitWriter()
        if matches > 0 {
            head.writeMatch()
            precondition(head.isAligned, "GzipZeros: the first match must end on a byte boundary")
            repeats = (matches - 1) / 8
            for _ in 0..<(matches - 1) % 8 { tail.writeMatch() }
        }
        var pattern = BitWriter()
        for _ in 0..<8 { pattern.writeMatch() }
        precondition(pattern.isAligned && pattern.bytes.count == 13, "GzipZeros: 8 matches must be 13 bytes")
        var ending = matches > 0 ? tail : head
        for _ in 0..<remainder { ending.writeLiteralZero() }
        ending.writeCode(0, length: 7)  // end of block (256)
        ending.flush()
        if matches > 0 {
            head.flush()
            prefix += head.bytes
        }
        var suffix = matches > 0 ? ending.bytes : []
        if matches == 0 { prefix += ending.bytes }
        for value in [crc32OfZeros(count: expandedSize), UInt32(truncatingIfNeeded: expandedSize)] {
            for shift in stride(from: 0, to: 32, by: 8) { suffix.append(UInt8(truncatingIfNeeded: value >> shift)) }
        }
        body = GeneratedBody(prefix: prefix, pattern: pattern.bytes, periodicLength: 13 * repeats, suffix: suffix)
    }
}

/// Writes a deflate bit stream: fields least significant bit first, Huffman codes most significant bit first.
private struct BitWriter {
    var bytes: [UInt8] = []
    private var current: UInt8 = 0
    private var used = 0

    var isAligned: Bool {
        used == 0
    }

    mutating func writeBit(_ bit: UInt32) {
        current |= UInt8(bit & 1) << used
        used += 1
        if used == 8 {
            bytes.append(current)
            current = 0
            used = 0
        }
    }

    mutating func writeBits(_ value: UInt32, count: Int) {
        for index in 0..<count { writeBit(value >> index) }
    }

    mutating func writeCode(_ code: UInt32, length: Int) {
        for index in (0..<length).reversed() { writeBit(code >> index) }
    }

    /// Literal 0: fixed code 00110000.
    mutating func writeLiteralZero() {
        writeCode(0x30, length: 8)
    }

    /// Length 258 (symbol 285: 11000101), distance 1 (distance code 0: 00000).
    mutating func writeMatch() {
        writeCode(0xC5, length: 8)
        writeCode(0, length: 5)
    }

    /// Pads the last byte with zero bits.
    mutating func flush() {
        if used > 0 {
            bytes.append(current)
            current = 0
            used = 0
        }
    }
}

/// The CRC-32 (IEEE, as in gzip) of `count` zero bytes, in O(log count): the register update for a zero byte is
/// linear over GF(2), so it is raised to the power `count` by repeated squaring (as zlib's `crc32_combine`).
func crc32OfZeros(count: Int) -> UInt32 {
    func times(_ matrix: [UInt32], _ vector: UInt32) -> UInt32 {
        var vector = vector
        var sum: UInt32 = 0
        var index = 0
        while vector != 0 {
            if vector & 1 != 0 { sum ^= matrix[index] }
            vector >>= 1
            index += 1
        }
        return sum
    }
    func square(_ matrix: [UInt32]) -> [UInt32] {
        (0..<32).map { times(matrix, matrix[$0]) }
    }
    // The operator for one zero bit: shift right, folding in the reflected polynomial.
    var operatorForBits = [UInt32](repeating: 0, count: 32)
    operatorForBits[0] = 0xEDB8_8320
    for index in 1..<32 { operatorForBits[index] = 1 << (index - 1) }
    var power = square(square(square(operatorForBits)))  // one zero byte
    var register: UInt32 = 0xFFFF_FFFF
    var remaining = count
    while remaining > 0 {
        if remaining & 1 != 0 { register = times(power, register) }
        remaining >>= 1
        if remaining > 0 { power = square(power) }
    }
    return ~register
}
