import Foundation

/// One record of the journal: an entry, the result of sending it, or the note that its handler ran.
enum JournalRecord {
    case entry(StoredEntry)
    case result(id: UUID, StoredResult)
    case done(id: UUID)

    var id: UUID {
        switch self {
        case .entry(let entry): return entry.id
        case .result(let id, _), .done(let id): return id
        }
    }

    var type: UInt8 {
        switch self {
        case .entry: return 1
        case .result: return 2
        case .done: return 3
        }
    }

    /// The framed record: `CBOX`, type (1 byte), payload length (4 bytes, little-endian), CRC-32 of type, length
    /// and payload (4 bytes, little-endian), then the JSON payload.
    func framed() throws -> Data {
        let encoder = JSONEncoder()
        let payload: Data
        switch self {
        case .entry(let entry): payload = try encoder.encode(entry)
        case .result(let id, let result): payload = try encoder.encode(ResultPayload(id: id, result: result))
        case .done(let id): payload = Data(id.uuidString.utf8)
        }
        var header = Data(JournalFormat.magic)
        header.append(type)
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { header.append(contentsOf: $0) }
        var crc = CRC32.update(0, header[4..<9])
        crc = CRC32.update(crc, payload)
        withUnsafeBytes(of: crc.littleEndian) { header.append(contentsOf: $0) }
        return header + payload
    }

    struct ResultPayload: Codable {
        var id: UUID
        var result: StoredResult
    }
}

enum JournalFormat {
    static let magic: [UInt8] = Array("CBOX".utf8)
    static let headerSize = 13
    /// A record larger than this is garbage, whatever its length field says.
    static let maximumRecordSize = 256 * 1024 * 1024

    /// The records of a segment, and whether anything in it was damaged (with the reason).
    static func parse(_ data: Data) -> (records: [(JournalRecord, Range<Int>)], damage: String?) {
        var records: [(JournalRecord, Range<Int>)] = []
        var damage: String?
        let bytes = [UInt8](data)
        var offset = 0
        let decoder = JSONDecoder()
        while offset < bytes.count {
            if let (record, length) = record(in: bytes, at: offset, decoder: decoder) {
                records.append((record, offset..<(offset + length)))
                offset += length
                continue
            }
            if damage == nil {
                damage =
                    bytes.count - offset < headerSize
                    ? "truncated record at byte \(offset)" : "damaged or truncated record at byte \(offset)"
            }
            // Resynchronise on the next magic number: intact records after the damage are still delivered.
            offset += 1
            while offset < bytes.count, !(bytes[offset] == magic[0] && hasMagic(bytes, offset)) { offset += 1 }
        }
        return (records, damage)
    }

    private static func hasMagic(_ bytes: [UInt8], _ offset: Int) -> Bool {
        offset + 4 <= bytes.count && bytes[offset..<(offset + 4)].elementsEqual(magic)
    }

    private static func record(in bytes: [UInt8], at offset: Int, decoder: JSONDecoder) -> (JournalRecord, Int)? {
        guard offset + headerSize <= bytes.count, hasMagic(bytes, offset) else { return nil }
        let type = bytes[offset + 4]
        let length = Int(readUInt32(bytes, offset + 5))
        let storedCRC = readUInt32(bytes, offset + 9)
        guard length <= maximumRecordSize, offset + headerSize + length <= bytes.count else { return nil }
        let payload = bytes[(offset + headerSize)..<(offset + headerSize + length)]
        var crc = CRC32.update(0, bytes[(offset + 4)..<(offset + 9)])
        crc = CRC32.update(crc, payload)
        guard crc == storedCRC else { return nil }
        let data = Data(payload)
        let record: JournalRecord?
        switch type {
        case 1: record = (try? decoder.decode(StoredEntry.self, from: data)).map { .entry($0) }
        case 2:
            record = (try? decoder.decode(JournalRecord.ResultPayload.self, from: data)).map {
                .result(id: $0.id, $0.result)
            }
        case 3: record = UUID(uuidString: String(decoding: data, as: UTF8.self)).map { .done(id: $0) }
        default: record = nil
        }
        return record.map { ($0, headerSize + length) }
    }

    private static func readUInt32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 3]) << 24
    }
}

/// CRC-32 (IEEE 802.3, as zlib).
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    static func update<Bytes: Collection>(_ crc: UInt32, _ bytes: Bytes) -> UInt32 where Bytes.Element == UInt8 {
        let table = Self.table
        return table.withUnsafeBufferPointer { table in
            var value = ~crc
            let done: Void? = bytes.withContiguousStorageIfAvailable { buffer in
                for byte in buffer { value = table[Int((value ^ UInt32(byte)) & 0xFF)] ^ (value >> 8) }
            }
            if done == nil {
                for byte in bytes { value = table[Int((value ^ UInt32(byte)) & 0xFF)] ^ (value >> 8) }
            }
            return ~value
        }
    }
}

/// What the journal held when it was opened.
struct JournalContents {
    /// Entries not yet done, by id.
    var entries: [UUID: StoredEntry] = [:]
    /// Results not yet handled, by id.
    var results: [UUID: StoredResult] = [:]
    /// Damaged files set aside: name, reason, intact entries recovered.
    var quarantined: [(file: String, reason: String, recovered: Int)] = []
}
