import Courier
import Foundation
import LoopbackHTTPServer
import Testing

/// Whatever text a caller puts in a query, a form or a path, the server reads back exactly that text.
///
/// The property tests use a seeded generator: a failure message names the seed, and setting the environment variable
/// `COURIER_TEST_SEED` to it replays the run (or explores new inputs with another seed). Strings are compared by
/// their UTF-8 bytes, since Swift's `==` would hide a change of Unicode normalization.
@Suite("Caller input")
struct InputEncodingTests {
    // MARK: Property tests

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Random query names and values, nil values included, arrive exactly as given")
    func randomQueryItems() async throws {
        let server = try echoServer()
        let client = server.client()
        var random = SplitMix64(seed: Self.seed(default: 0x5EED_0001))
        for batch in 0..<Self.batches {
            let items = (0..<Self.itemsPerRequest).map { _ -> URLQueryItem in
                let name = random.text()
                // An empty name without a value would be an empty piece (`&&`), which servers skip: not generated.
                let value = name.isEmpty || random.chance(0.8) ? random.text() : nil
                return URLQueryItem(name: name, value: value)
            }
            let echo = try await client.run(Echo(path: "q", method: .get, queryItems: items)).value
            let sent = items.map { ExactItem(name: $0.name, value: $0.value) }
            let received = echo.queryItems.map { ExactItem(name: $0.name, value: $0.value) }
            #expect(received == sent, "seed \(random.seed), batch \(batch), raw query \(echo.rawQuery ?? "nil")")
            if received != sent { return }
        }
        #expect(server.requestCount == Self.batches)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Random form names and values arrive exactly as given; items with nil values are left out")
    func randomFormItems() async throws {
        let server = try echoServer()
        let client = server.client()
        var random = SplitMix64(seed: Self.seed(default: 0x5EED_0002))
        for batch in 0..<Self.batches {
            let items = (0..<Self.itemsPerRequest).map { _ in
                URLFormItem(name: random.text(), value: random.chance(0.9) ? random.text() : nil)
            }
            let echo = try await client.run(Echo(path: "form", method: .post, formItems: items)).value
            let sent = items.compactMap { item in item.value.map { ExactItem(name: item.name, value: $0) } }
            let received = echo.formItems.map { ExactItem(name: $0.name, value: $0.value) }
            #expect(echo.header("content-type") == "application/x-www-form-urlencoded")
            #expect(
                received == sent,
                "seed \(random.seed), batch \(batch), body \(String(decoding: echo.bodyData, as: UTF8.self))")
            if received != sent { return }
        }
        #expect(server.requestCount == Self.batches)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Paths of random segments arrive as the same decoded path")
    func randomPaths() async throws {
        let server = try echoServer()
        let client = NetworkClient(configuration: server.configuration(path: "base"))
        var random = SplitMix64(seed: Self.seed(default: 0x5EED_0003))
        for batch in 0..<Self.batches {
            // Segments never hold "/" (that would make more segments) and are never "." or "..", which are rejected.
            var segments = (0..<Self.itemsPerRequest).map { _ in random.text(excluding: "/") }
            for index in segments.indices where segments[index] == "." || segments[index] == ".." {
                segments[index] += "x"
            }
            let path = segments.joined(separator: "/")
            let echo = try await client.run(Echo(path: path, method: .get)).value
            // Leading slashes are dropped: the path goes after exactly one "/" behind the base URL.
            let expected = "/base/" + String(decoding: path.utf8.drop { $0 == UInt8(ascii: "/") }, as: UTF8.self)
            let received = ExactText(echo.path)
            #expect(
                received == ExactText(expected),
                "seed \(random.seed), batch \(batch), path \(String(reflecting: path)), target \(echo.target)")
            #expect(echo.rawQuery == nil)
            if received != ExactText(expected) { return }
        }
        #expect(server.requestCount == Self.batches)
    }

    // MARK: Wire format

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("An empty value and a nil value are distinct on the wire")
    func emptyVersusNil() async throws {
        let server = try echoServer()
        let items = [
            URLQueryItem(name: "a", value: ""), URLQueryItem(name: "a", value: nil),
            URLQueryItem(name: "b", value: "x"),
        ]
        let echo = try await server.client().run(Echo(method: .get, queryItems: items)).value
        #expect(echo.rawQuery == "a=&a&b=x")
        #expect(
            echo.queryItems == [
                ServerQueryItem(name: "a", value: ""), ServerQueryItem(name: "a", value: nil),
                ServerQueryItem(name: "b", value: "x"),
            ])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Query and form items keep their order and their duplicate names")
    func orderAndDuplicates() async throws {
        let server = try echoServer()
        let client = server.client()
        let names = ["z", "a", "z", "m", "a", "a"]
        let values: [String?] = ["1", "2", "3", nil, "2", ""]
        let query = zip(names, values).map { URLQueryItem(name: $0, value: $1) }
        let echo = try await client.run(Echo(method: .get, queryItems: query)).value
        #expect(echo.rawQuery == "z=1&a=2&z=3&m&a=2&a=")
        #expect(echo.queryItems == zip(names, values).map { ServerQueryItem(name: $0, value: $1) })

        let form = zip(names, values).map { URLFormItem(name: $0, value: $1) }
        let posted = try await client.run(Echo(method: .post, formItems: form)).value
        #expect(String(decoding: posted.bodyData, as: UTF8.self) == "z=1&a=2&z=3&a=2&a=")
        #expect(
            posted.formItems == [
                ServerQueryItem(name: "z", value: "1"), ServerQueryItem(name: "a", value: "2"),
                ServerQueryItem(name: "z", value: "3"), ServerQueryItem(name: "a", value: "2"),
                ServerQueryItem(name: "a", value: ""),
            ])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("'+' and '&' and '=' in queries and forms arrive as themselves, not as a space or a separator")
    func plusIsNotSpace() async throws {
        let server = try echoServer()
        let client = server.client()
        let query = [URLQueryItem(name: "a+b", value: "1+1=2 & 3"), URLQueryItem(name: "c d", value: "+")]
        let echo = try await client.run(Echo(method: .get, queryItems: query)).value
        #expect(
            echo.queryItems == [
                ServerQueryItem(name: "a+b", value: "1+1=2 & 3"), ServerQueryItem(name: "c d", value: "+"),
            ])
        let form = [URLFormItem(name: "a+b", value: "1+1=2 & 3"), URLFormItem(name: "c d", value: "+")]
        let posted = try await client.run(Echo(method: .post, formItems: form)).value
        #expect(
            posted.formItems == [
                ServerQueryItem(name: "a+b", value: "1+1=2 & 3"), ServerQueryItem(name: "c d", value: "+"),
            ])
    }

    // MARK: Base URL and path

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A base URL with or without trailing slashes joins the path with exactly one slash",
        arguments: ["", "/", "/api", "/api/", "/api//"], ["x/y", "/x/y", "//x/y", "x/y/"])
    func baseURLJoin(basePath: String, path: String) async throws {
        let server = try echoServer()
        let client = makeClient(baseURL: server.url(basePath))
        let echo = try await client.run(Echo(path: path, method: .get)).value
        let prefix = basePath.hasPrefix("/api") ? "/api" : ""
        let expected = prefix + (path.hasSuffix("/") ? "/x/y/" : "/x/y")
        #expect(echo.path == expected)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("An empty or nil path means the base URL itself, as given", arguments: ["", "/", "/api", "/api/"])
    func emptyPath(basePath: String) async throws {
        let server = try echoServer()
        let client = makeClient(baseURL: server.url(basePath))
        #expect(try await client.run(Echo(path: nil, method: .get)).value.path == (basePath.isEmpty ? "/" : basePath))
        #expect(try await client.run(Echo(path: "", method: .get)).value.path == (basePath.isEmpty ? "/" : basePath))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The base URL's own query comes first, then the request's items")
    func baseURLQuery() async throws {
        let server = try echoServer()
        let client = makeClient(baseURL: server.url("/api?key=k%201"))
        let echo = try await client.run(
            Echo(path: "x", method: .get, queryItems: [URLQueryItem(name: "q", value: "v")])
        )
        .value
        #expect(echo.path == "/api/x")
        #expect(
            echo.queryItems == [ServerQueryItem(name: "key", value: "k 1"), ServerQueryItem(name: "q", value: "v")])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "Paths with reserved, percent and non-ASCII characters arrive as the same decoded path",
        arguments: [
            "a?b", "a#b", "a?b#c", "100%", "%41", "%2F", "a%2Fb", "%%", "a b", "a+b", "a;b=c", "tab\there",
            "új/ünï/cødé", "日本/語", "שלום/مرحبا", "e\u{301}", "👨‍👩‍👧/🇫🇷", "a\\b", "~user/@me/:x", "[::1]",
            "...", ".a/a.",
        ])
    func specialPath(path: String) async throws {
        let server = try echoServer()
        let echo = try await server.client().run(Echo(path: path, method: .get)).value
        #expect(ExactText(echo.path) == ExactText("/" + path), "target \(echo.target)")
        #expect(echo.rawQuery == nil)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A path that looks like another host still reaches the configured server")
    func pathCannotChangeHost() async throws {
        let server = try echoServer()
        let other = try echoServer(host: "127.0.0.2")
        let client = server.client()
        let authority = "127.0.0.2:\(other.port)"
        let paths = [
            "//\(authority)/x", "http://\(authority)/x", "///\(authority)/x", "@\(authority)/x", "\\\\\(authority)/x",
            "http:\\\\\(authority)/x", "user@\(authority)/x",
        ]
        for path in paths {
            let echo = try await client.run(Echo(path: path, method: .get)).value
            let expected = "/" + path.drop { $0 == "/" }
            #expect(echo.path == expected, "path \(path), target \(echo.target)")
            #expect(echo.header("host") == "127.0.0.1:\(server.port)")
        }
        #expect(server.requestCount == paths.count)
        #expect(other.requestCount == 0)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A path with a '.' or '..' segment is invalidURL and nothing is sent",
        arguments: [
            ".", "..", "a/./b", "a/../b", "a/..", "./a", "a/b/..",
            // "/" followed by a combining mark is one Character, yet the bytes still make a "." or ".." segment.
            "../\u{301}admin", "a/./\u{301}b", "a/b/../\u{20DD}",
        ])
    func dotSegments(path: String) async throws {
        let server = try echoServer()
        await #expect {
            _ = try await server.client().run(Echo(path: path, method: .get))
        } throws: { error in
            guard case NetworkClientError.invalidURL = error else { return false }
            return true
        }
        #expect(server.requestCount == 0)
    }

    // MARK: Helpers

    /// A client whose base URL is exactly `baseURL`.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func makeClient(baseURL: URL) -> NetworkClient {
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.timeoutIntervalForRequest = 10
        return NetworkClient(
            configuration: NetworkConfiguration(sessionConfiguration: sessionConfiguration, baseURL: baseURL))
    }

    /// 2,000 random strings (names, values or segments) per test, 20 per request.
    static let itemsPerRequest = 20
    static let batches = 100

    /// `COURIER_TEST_SEED` (decimal or 0x-hex) if set, else `fallback`.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    static func seed(default fallback: UInt64) -> UInt64 {
        guard let text = ProcessInfo.processInfo.environment["COURIER_TEST_SEED"] else { return fallback }
        let parsed = text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
        return parsed ?? fallback
    }
}

/// Text compared by its UTF-8 bytes, so that a change of Unicode normalization is a difference.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct ExactText: Equatable, CustomStringConvertible {
    let text: String

    init(_ text: String) {
        self.text = text
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    static func == (lhs: ExactText, rhs: ExactText) -> Bool {
        lhs.text.utf8.elementsEqual(rhs.text.utf8)
    }

    var description: String { String(reflecting: text) }
}

/// A name and value compared by their UTF-8 bytes.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct ExactItem: Equatable, CustomStringConvertible {
    let name: ExactText
    let value: ExactText?

    init(name: String, value: String?) {
        self.name = ExactText(name)
        self.value = value.map(ExactText.init)
    }

    var description: String { "\(name)=\(value.map(\.description) ?? "nil")" }
}

/// SplitMix64 (Steele, Lea and Flood): a tiny, fast, seedable generator, so a failing run can be replayed.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct SplitMix64: RandomNumberGenerator {
    /// The seed this generator started from, for failure messages.
    let seed: UInt64
    private var state: UInt64

    init(seed: UInt64) {
        self.seed = seed
        self.state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// True with probability `probability`.
    mutating func chance(_ probability: Double) -> Bool {
        Double.random(in: 0..<1, using: &self) < probability
    }

    /// The pieces random text is made of: reserved ASCII, whitespace and controls, unreserved ASCII, emoji (with skin
    /// tones, ZWJ sequences and flags), combining marks (also at the very start), CJK, right-to-left scripts and
    /// bidi marks, and other non-ASCII corners.
    private static let pieces: [[String]] = [
        ["!", "#", "$", "&", "'", "(", ")", "*", "+", ",", "/", ":", ";", "=", "?", "@", "[", "]", "%"],
        [" ", "  ", "\t", "\n", "\r\n", "\u{0}", "\u{7F}", "\u{1B}"],
        ["a", "Z", "0", "9", "-", ".", "_", "~", "abc", "%20", "%2B", "%zz", "+%", "==", "&&"],
        ["\"", "<", ">", "\\", "^", "`", "{", "|", "}"],
        ["😀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "🏳️‍🌈", "\u{1F9D1}\u{200D}\u{1F4BB}"],
        ["e\u{301}", "a\u{308}\u{304}", "\u{301}", "\u{20DD}", "n\u{303}"],
        ["漢字", "日本語", "한국어", "中", "𠀀"],
        ["שלום", "مرحبا", "\u{200F}", "\u{202E}", "ع"],
        ["ß", "ﬁ", "\u{FEFF}", "\u{A0}", "€", "\u{FFFD}", "\u{10FFFF}", "İ"],
    ]

    /// Random text of 0 to 12 pieces (empty about one time in ten), never containing `excluded`.
    mutating func text(excluding excluded: Unicode.Scalar? = nil) -> String {
        if chance(0.1) { return "" }
        var text = ""
        for _ in 0..<Int.random(in: 1...12, using: &self) {
            let group = Self.pieces[Int.random(in: 0..<Self.pieces.count, using: &self)]
            text += group[Int.random(in: 0..<group.count, using: &self)]
        }
        // By scalar: "/" followed by a combining mark is one Character, but still a "/" on the wire.
        if let excluded { text.unicodeScalars.removeAll { $0 == excluded } }
        return text
    }
}
