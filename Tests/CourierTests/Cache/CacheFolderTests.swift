import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The disk cache's directory: another user's folder, a folder others could write to, a salt this user did not make,
/// a symbolic link, a second cache (in this process or another) on the same folder.
@Suite("ResponseCache: whose directory it is")
struct CacheFolderTests {
    /// The URL every cache here files its response under.
    static let url = URL(string: "https://api.test/r")!
    /// `nobody` on Linux and macOS.
    static let otherUser: uid_t = 65_534
    static let isRoot = geteuid() == 0

    /// A client with a disk cache in `directory` over a transport that answers `body`, fresh for an hour
    /// (`no-store` when `storing` is false).
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    static func client(
        _ directory: URL, answering body: String, storing: Bool = true
    ) throws -> (NetworkClient, ResponseCache) {
        let transport = InMemoryTransport { _ in
            InMemoryTransport.Response(
                headers: ["Cache-Control": storing ? "max-age=3600" : "no-store"], body: Data(body.utf8))
        }
        let cache = try ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: directory)
        let configuration = NetworkConfiguration(transport: transport, baseURL: url)
        configuration.responseCache = cache
        return (NetworkClient(configuration: configuration), cache)
    }

    /// Stores `body` for ``url`` in a cache on `directory`, then lets the cache go (and its lock).
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    static func fill(_ directory: URL, with body: String) async throws {
        let (client, _) = try client(directory, answering: body)
        let response = try await client.run(NetworkRequest<VoidRequest, String>(method: .get))
        #expect(response.value == body && response.cacheStatus == .network)
        #expect(!cacheFiles(in: directory).isEmpty)
    }

    /// What a client with a cache on `directory` gets for ``url`` when the server answers "from the server".
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    static func served(from directory: URL) async throws -> (String, CacheStatus) {
        let (client, _) = try client(directory, answering: "from the server", storing: false)
        let response = try await client.run(NetworkRequest<VoidRequest, String>(method: .get))
        return (response.value, response.cacheStatus)
    }

    static func mode(_ path: String) -> Int {
        var info = stat()
        return lstat(path, &info) == 0 ? Int(info.st_mode & 0o7777) : -1
    }

    /// Gives `directory` and everything in it to ``otherUser``.
    static func giveAway(_ directory: URL) throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        for path in [directory.path] + names.map({ directory.appendingPathComponent($0).path }) {
            #expect(chown(path, otherUser, otherUser) == 0, "chown \(path): errno \(errno)")
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A folder another user made (0777, its own salt, a valid entry) is refused: its entry is never served",
        .enabled(if: isRoot, "needs root, to give the folder to another user (chown); run the tests as root"))
    func anotherUsersFolder() async throws {
        let directory = cacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.fill(directory, with: "POISONED-BY-UID-65534")
        try Self.giveAway(directory)
        #expect(chmod(directory.path, 0o777) == 0)

        #expect {
            _ = try ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: directory)
        } throws: { error in
            guard case ResponseCacheError.directoryNotOwned(_, let owner) = error else { return false }
            return owner == UInt32(Self.otherUser)
        }
        await #expect(throws: ResponseCacheError.self) { try await Self.served(from: directory) }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A folder of ours that others could write to is made 0700, and nothing it held is served")
    func folderOthersCouldWrite() async throws {
        let directory = cacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.fill(directory, with: "written while the folder was open to all")
        #expect(chmod(directory.path, 0o777) == 0)

        #expect(try await Self.served(from: directory) == ("from the server", .network))
        #expect(Self.mode(directory.path) == 0o700)
        #expect(cacheFiles(in: directory).isEmpty)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A salt others could read is not trusted: what it keyed is removed, a new salt made")
    func saltOthersCouldRead() async throws {
        let directory = cacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.fill(directory, with: "keyed with a salt others could read")
        let salt = directory.appendingPathComponent("salt")
        let before = try Data(contentsOf: salt)
        #expect(chmod(salt.path, 0o644) == 0)

        #expect(try await Self.served(from: directory) == ("from the server", .network))
        #expect(try Data(contentsOf: salt) != before)
        #expect(Self.mode(salt.path) == 0o600)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A salt another user made, in a folder of ours, is never read: its entries are removed, not served",
        .enabled(if: isRoot, "needs root, to give the salt to another user (chown); run the tests as root"))
    func anotherUsersSalt() async throws {
        let directory = cacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.fill(directory, with: "POISONED-BY-UID-65534")
        try Self.giveAway(directory)
        #expect(chown(directory.path, geteuid(), getegid()) == 0)

        #expect(try await Self.served(from: directory) == ("from the server", .network))
        var info = stat()
        #expect(lstat(directory.appendingPathComponent("salt").path, &info) == 0 && info.st_uid == geteuid())
        #expect(cacheFiles(in: directory).isEmpty)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A folder of ours readable by others (0755) is made 0700 and still serves what it holds")
    func folderModeFixed() async throws {
        let directory = cacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.fill(directory, with: "kept")
        #expect(chmod(directory.path, 0o755) == 0)

        #expect(try await Self.served(from: directory) == ("kept", .fresh))
        #expect(Self.mode(directory.path) == 0o700)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A symbolic link given as the folder is not followed: refused, and the folder it points to untouched")
    func symbolicLink() async throws {
        let target = cacheDirectory()
        let link = cacheDirectory()
        defer {
            try? FileManager.default.removeItem(at: link)
            try? FileManager.default.removeItem(at: target)
        }
        #expect(mkdir(target.path, 0o755) == 0)
        #expect(chmod(target.path, 0o755) == 0)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)

        #expect(throws: ResponseCacheError.symbolicLink(path: link.standardizedFileURL.path)) {
            _ = try ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: link)
        }
        #expect(Self.mode(target.path) == 0o755)
        #expect(try FileManager.default.contentsOfDirectory(atPath: target.path).isEmpty)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A folder whose parent anyone may write to (without the sticky bit) is refused")
    func replaceableFolder() async throws {
        let parent = cacheDirectory()
        defer { try? FileManager.default.removeItem(at: parent) }
        #expect(mkdir(parent.path, 0o700) == 0)
        #expect(chmod(parent.path, 0o777) == 0)
        let directory = parent.appendingPathComponent("cache")

        #expect(throws: ResponseCacheError.replaceableDirectory(path: directory.standardizedFileURL.path)) {
            _ = try ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: directory)
        }
        // With the sticky bit, as /tmp has it, only the owner may rename or remove the folder: it is used.
        #expect(chmod(parent.path, 0o1777) == 0)
        _ = try ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: directory)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A second cache on a folder in use, in this process, is refused until the first is gone")
    func secondCacheInThisProcess() async throws {
        let directory = cacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let first = try ResponseCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: directory)
            #expect(throws: ResponseCacheError.directoryInUse(path: directory.standardizedFileURL.path)) {
                _ = try ResponseCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: directory)
            }
            #expect(first.isDiskAvailable)
        }
        _ = try ResponseCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: directory)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Another process cannot open a folder this process's cache holds, and can once it is released")
    func secondCacheInAnotherProcess() async throws {
        let directory = cacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let held = try ResponseCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: directory)
            let refused = try await runProbe(
                "cache-fill", arguments: ["--directory", directory.path], timeLimit: .seconds(120))
            let inUse = refused.output.contains("in use by another ResponseCache")
            #expect(!refused.signaled && !refused.timedOut && refused.status == 1 && inUse, "\(refused.excerpt)")
            #expect(held.currentDiskUsage == 32, "only the salt: the other process wrote nothing")
        }
        let allowed = try await runProbe(
            "cache-fill", arguments: ["--directory", directory.path], timeLimit: .seconds(120))
        #expect(allowed.behaved, "\(allowed.ending)\n\(allowed.excerpt)")
    }
}
