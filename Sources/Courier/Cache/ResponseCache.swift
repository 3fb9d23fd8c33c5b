import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An HTTP cache for Courier's requests, the same on Linux and Apple platforms: RFC 9111 for a private cache, with
/// RFC 5861's `stale-while-revalidate` and `stale-if-error`.
///
/// Set it on a configuration (``NetworkConfiguration/responseCache``) and every `GET` the configuration's clients run
/// is answered from it when the rules allow, validated with `If-None-Match` / `If-Modified-Since` when they ask, and
/// stored when the response may be: see <doc:CachingResponses> for what is stored, for how long and how it is keyed.
/// The cache works on HTTP messages below decoding, so every response type, decoder, decorator and transport works
/// unchanged, and ``NetworkResponse/cacheStatus`` says where each response came from.
///
/// ```swift
/// let cache = ResponseCache(memoryCapacity: 4 * 1024 * 1024)
/// let configuration = NetworkConfiguration(baseURL: URL(string: "https://api.example.com")!)
/// configuration.responseCache = cache
/// ```
///
/// - Memory: at most `memoryCapacity` bytes (body plus header fields of each response), least recently used out
///   first.
/// - Disk (with ``init(memoryCapacity:diskCapacity:directory:)``): at most `diskCapacity` bytes of files, written
///   atomically with owner-only permissions and checksummed; a damaged file is a miss and is removed. The directory
///   must be the cache's own, and is locked to it while it lives: see the initializer for what is refused.
/// - A response larger than ``maximumEntryFraction`` of a store's capacity is not kept in that store.
///
/// It is a reference type, safe to use from any thread and to share between configurations (one cache per account
/// makes clearing an account's responses one ``removeAll()``).
public final class ResponseCache: Sendable {
    /// The most bytes held in memory.
    public let memoryCapacity: Int
    /// The most bytes of files on disk; 0 when there is no disk store.
    public let diskCapacity: Int
    /// The directory of the disk store, `nil` without one.
    public let directory: URL?

    /// The largest share of a store's capacity one response may take: 1/10. A larger response is not kept there.
    public static let maximumEntryFraction = 0.1
    /// The most fields a stored response's `Vary` may name: 32. A response whose `Vary` names more is not stored (it
    /// goes to the caller, like a `no-store` one), so that a lookup compares at most this many request fields,
    /// whatever a server sends. Real `Vary` fields name a handful.
    public static let maximumVaryFields = 32
    /// The share of the time since `Last-Modified` that a response without an explicit lifetime stays fresh (RFC
    /// 9111, 4.2.2): 1/10.
    public static let heuristicFraction = 0.1
    /// The longest heuristic lifetime: one week.
    public static let maximumHeuristicLifetime: TimeInterval = 7 * 24 * 3600

    private let memory: Locked<MemoryStore>
    let disk: DiskStore?
    /// The salt of the credential partitions: the disk store's, or one made for this process.
    let salt: String
    /// The keys being revalidated in the background (`stale-while-revalidate`): one revalidation at a time each.
    private let revalidating = Locked(Set<CacheKey>())

    /// Creates a cache in memory only.
    ///
    /// - Parameter memoryCapacity: The most bytes kept in memory; 0 or less keeps nothing.
    public convenience init(memoryCapacity: Int) {
        self.init(memoryCapacity: memoryCapacity, disk: nil)
    }

    /// Creates a cache in memory and in `directory`, which must be the cache's own.
    ///
    /// The directory is created (`0700`) when missing. An existing one is used only if it is safe: this process's
    /// user owns it, it is not a symbolic link, and no other cache has it open; its mode is set to `0700`, and when
    /// others could write to it, or its salt is not a file this user made, what it holds is removed, never served.
    /// The directory stays locked to this cache (a `cache.lock` file) until the cache is released. Keep it in a
    /// per-user location, such as the user's caches directory; never in a directory shared with other users, such
    /// as `/tmp` on Linux.
    ///
    /// - Parameters:
    ///   - memoryCapacity: The most bytes kept in memory; 0 or less keeps nothing there.
    ///   - diskCapacity: The most bytes of files kept in `directory`; 0 or less keeps nothing on disk (the directory
    ///     is then not opened).
    ///   - directory: The cache's own directory.
    /// - Throws: ``ResponseCacheError``: ``ResponseCacheError/directoryInUse(path:)`` when another cache, in this
    ///   process or another, has it open; ``ResponseCacheError/directoryNotOwned(path:owner:)``,
    ///   ``ResponseCacheError/symbolicLink(path:)``, ``ResponseCacheError/notADirectory(path:)`` or
    ///   ``ResponseCacheError/replaceableDirectory(path:)`` when it is not safe to use;
    ///   ``ResponseCacheError/storageFailed(operation:path:code:)`` when it cannot be created or read.
    public convenience init(memoryCapacity: Int, diskCapacity: Int, directory: URL) throws(ResponseCacheError) {
        let disk = diskCapacity > 0 ? try DiskStore(directory: directory, capacity: diskCapacity) : nil
        self.init(memoryCapacity: memoryCapacity, disk: disk)
    }

    private init(memoryCapacity: Int, disk: DiskStore?) {
        self.memoryCapacity = max(0, memoryCapacity)
        self.diskCapacity = disk?.capacity ?? 0
        self.directory = disk?.directory
        self.memory = Locked(MemoryStore(capacity: memoryCapacity))
        self.disk = disk
        self.salt = disk?.salt ?? CacheKey.newSalt()
    }

    /// Whether responses are kept on disk: a directory and a disk capacity above 0 were given.
    public var isDiskAvailable: Bool { disk != nil }

    /// The bytes held in memory now.
    public var currentMemoryUsage: Int { memory.withLock { $0.totalCost } }

    /// The bytes of the disk store's files now (0 without one).
    public var currentDiskUsage: Int { disk?.totalBytes ?? 0 }

    /// Removes every stored response, in memory and on disk.
    public func removeAll() {
        memory.withLock { $0.removeAll() }
        disk?.removeAll()
    }

    /// Removes every stored response for `url` (the full URL, query included; the fragment is ignored), whatever
    /// credentials fetched it.
    public func removeResponses(for url: URL) {
        let address = CacheKey.address(of: url)
        memory.withLock { $0.remove(url: address) }
        disk?.remove(url: address)
    }

    // MARK: The stores

    /// The response under `key`: from memory, else from disk (then kept in memory too).
    func lookup(_ key: CacheKey) -> StoredResponse? {
        if let found = memory.withLock({ $0.get(key) }) { return found }
        guard let disk, let found = disk.read(key) else { return nil }
        memory.withLock { $0.set(found, for: key, limit: Self.limit(of: memoryCapacity)) }
        return found
    }

    /// Keeps `response` under `key` in both stores.
    func store(_ response: StoredResponse, for key: CacheKey) {
        memory.withLock { $0.set(response, for: key, limit: Self.limit(of: memoryCapacity)) }
        disk?.write(response, for: key, limit: Self.limit(of: diskCapacity))
    }

    /// Removes what is under `key`.
    func remove(_ key: CacheKey) {
        memory.withLock { $0.remove(key) }
        disk?.remove(key)
    }

    /// Marks `key` as revalidating; `false` when it already is.
    func beginRevalidation(_ key: CacheKey) -> Bool {
        revalidating.withLock { $0.insert(key).inserted }
    }

    func endRevalidation(_ key: CacheKey) {
        _ = revalidating.withLock { $0.remove(key) }
    }

    private static func limit(of capacity: Int) -> Int {
        Int(Double(capacity) * maximumEntryFraction)
    }
}
