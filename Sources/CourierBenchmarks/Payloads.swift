import Foundation

// The JSON bodies the benchmark sends and receives. Every value is computed from constants, so the bytes are the
// same on every run and on every machine: `--write-fixtures` writes exactly what the in-process server serves.

/// The small object (about 100 bytes of JSON) served at `/small.json`, `/post` and `/slow`.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct SmallItem: Codable, Sendable, Equatable {
    let active: Bool
    let email: String
    let id: Int
    let name: String
    let score: Double
    let tags: [String]

    /// The one value the server sends.
    static let sample = SmallItem(
        active: true, email: "ada@example.com", id: 42, name: "Ada Lovelace", score: 98.5,
        tags: ["math", "cs"])
}

/// One element of the 1 MB array served at `/large.json`.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct LargeItem: Codable, Sendable, Equatable {
    let available: Bool
    let id: Int
    let name: String
    let price: Double
    let quantity: Int
    let sku: String

    /// The element at `index`: about 100 bytes of JSON.
    init(index: Int) {
        available = index % 3 != 0
        id = index
        name = "Item number \(index)"
        price = Double(index % 1000) + 0.25
        quantity = index % 97
        sku = "SKU-" + String(repeating: "0", count: max(0, 6 - String(index).count)) + String(index)
    }
}

/// The body of the POST scenario: exactly 1,024 bytes of JSON.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct PostBody: Codable, Sendable, Equatable {
    let id: Int
    let title: String
    let tags: [String]
    let text: String

    /// The one value the benchmark posts, padded so that it encodes to exactly ``encodedSize`` bytes.
    static let sample: PostBody = {
        let empty = PostBody(id: 7, title: "Benchmark post", tags: ["swift", "http", "benchmark"], text: "")
        let overhead = (try? JSONEncoder().encode(empty).count) ?? 0
        let filler = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. "
        let text = String(String(repeating: filler, count: 20).prefix(max(0, encodedSize - overhead)))
        return PostBody(id: empty.id, title: empty.title, tags: empty.tags, text: text)
    }()

    /// The size of ``sample`` as JSON.
    static let encodedSize = 1_024
}

/// The exact response bodies, encoded once with sorted keys so that the bytes are reproducible.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
enum Fixtures {
    /// The number of elements in `/large.json`.
    static let largeCount = 10_000

    /// The body of `/small.json`, `/post` and `/slow`.
    static let small: Data = encode(SmallItem.sample)

    /// The body of `/large.json`: ``largeCount`` ``LargeItem``s, about 1 MB.
    static let large: Data = encode((0..<largeCount).map(LargeItem.init(index:)))

    private static func encode(_ value: some Encodable) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        do {
            return try encoder.encode(value)
        } catch {
            fatalError("The benchmark's own fixtures failed to encode: \(error)")
        }
    }
}
