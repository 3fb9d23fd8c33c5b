import Foundation
import Testing

@testable import Courier

@Suite("ResponseCache: parsing and digests")
struct CacheParsingTests {
    @Test("HTTP dates in the three forms RFC 9110 names, and nothing else")
    func httpDates() {
        let expected: TimeInterval = 784_111_777  // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == expected)
        #expect(HTTPDate.format(expected) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 gmt") == expected)
        #expect(HTTPDate.parse("Thursday, 18-Aug-50 02:01:18 GMT") == HTTPDate.parse("Thu, 18 Aug 2050 02:01:18 GMT"))
        #expect(HTTPDate.parse("0") == nil)
        #expect(HTTPDate.parse("Sun 06 Nov 1994 08:49:37 GMT") == nil)  // no comma
        #expect(HTTPDate.parse("Sun, 06 Nov  1994 08:49:37 GMT") == nil)  // two spaces
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 8:49:37 GMT") == nil)  // one-digit hour
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 25:49:37 GMT") == nil)
    }

    @Test("Cache-Control: names are case-insensitive, quoted arguments read, bad delta-seconds handled")
    func cacheControl() {
        let control = CacheControl(#"Max-Age="60", no-cache="Set-Cookie, X-A", stale-if-error=30, max-stale"#)
        #expect(control.maxAge == 60 && control.noCache && control.staleIfError == 30 && control.maxStaleAny)
        let invalid = CacheControl("max-age=-1")
        #expect(invalid.maxAge == nil && invalid.invalidMaxAge)
        #expect(CacheControl("max-age=99999999999999999999").maxAge == Int(Int32.max))
        #expect(CacheControl("max-age=10, max-age=20").maxAge == 10)
    }

    @Test("Hop-by-hop fields, the fields Connection names and Set-Cookie are not stored")
    func storedFields() throws {
        let head = try #require(
            HTTPURLResponse(
                url: URL(string: "https://cache.test/")!, statusCode: 200, httpVersion: "HTTP/1.1",
                headerFields: [
                    "Connection": "a, b", "a": "1", "b": "2", "c": "3", "Keep-Alive": "timeout=5",
                    "Set-Cookie": "s=1",
                ]))
        #expect(StoredResponse.fields(of: head).map { $0.name.lowercased() } == ["c"])
    }

    @Test("SHA-256 matches the FIPS 180-4 test vectors")
    func sha256() {
        func hex(_ text: String) -> String { SHA256Digest.hex(text) }
        #expect(hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(
            hex(String(repeating: "a", count: 1_000_000))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}
