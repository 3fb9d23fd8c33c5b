import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The on-disk part of a ``ResponseCache``: one file per response in its directory, never more than `capacity` bytes
/// in all.
///
/// - The directory is opened by ``CacheFolder``: this user's own, writable by no one else, locked to this store, with
///   a salt it made itself.
/// - A file is written whole to a temporary name with owner-only permissions (`0600`) and renamed into place, so a
///   reader sees the old file or the new one, never a part.
/// - A file starts with a SHA-256 digest of the rest: a truncated or altered file is a miss, and is removed.
/// - A file holds no URL and no credential in the clear: its name and its key check are salted digests, and the
///   `Vary` request values are salted digests or none (``VarySelection``).
/// - The index (names, sizes, use order) lives in memory under a lock, and no file work happens under it. Within a
///   process the least recently used file goes first; a new process starts from the files' modification dates.
final class DiskStore: Sendable {
    /// The name ending of an entry's file.
    static let fileExtension = ".cached"
    /// The first bytes of an entry's file (2: salted `Vary` digests).
    private static let magic = Data("CRCH2".utf8)
    private static let temporaryPrefix = ".tmp-"

    let directory: URL
    let capacity: Int
    /// The salt of every digest in this directory's names and files.
    var salt: String { folder.salt }
    /// The directory, its salt and its lock (held as long as the store lives).
    private let folder: CacheFolder
    private let index: Locked<Index>

    private struct Index: Sendable {
        var files: [String: Record] = [:]
        /// Bytes of every file counted (the salt file included).
        var total = 0
        var clock: UInt64 = 0
    }

    private struct Record: Sendable {
        var size: Int
        var lastUse: UInt64
    }

    /// What a file holds besides the body.
    private struct Metadata: Codable {
        var key: String
        var status: Int
        var headers: [StoredResponse.HeaderField]
        var requestTime: TimeInterval
        var responseTime: TimeInterval
        var varyValues: [String: String]
    }

    /// Opens (creating it if needed) the store in `directory`.
    ///
    /// - Throws: ``ResponseCacheError`` when the directory is not safe to use or cannot be used
    ///   (see ``CacheFolder``).
    init(directory: URL, capacity: Int) throws(ResponseCacheError) {
        self.directory = directory
        self.capacity = max(0, capacity)
        folder = try CacheFolder(directory, removeEntries: { Self.removeEntries(in: $0) })
        // What is already there: this user's own entry files, their sizes and modification dates; leftovers of
        // interrupted writes, and anything else in an entry's place, are removed.
        var found: [(name: String, size: Int, date: TimeInterval)] = []
        for name in Self.names(in: folder.path) {
            let path = (folder.path as NSString).appendingPathComponent(name)
            if name.hasPrefix(Self.temporaryPrefix) {
                unlink(path)
                continue
            }
            guard name.hasSuffix(Self.fileExtension) else { continue }
            var info = stat()
            guard lstat(path, &info) == 0, CacheFolder.isOwnPrivateFile(info) else {
                unlink(path)
                continue
            }
            found.append((name, Int(info.st_size), Self.modificationTime(info)))
        }
        found.sort { $0.date < $1.date }
        var index = Index()
        index.total = folder.salt.utf8.count
        for (clock, file) in found.enumerated() {
            index.files[file.name] = Record(size: file.size, lastUse: UInt64(clock))
            index.total += file.size
        }
        index.clock = UInt64(found.count)
        let victims = Self.evict(&index, toFit: 0, capacity: self.capacity)
        self.index = Locked(index)
        remove(victims)
    }

    /// The names in the directory at `path`.
    private static func names(in path: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
    }

    /// Removes every entry file and leftover in the directory at `path` (their salt is not trusted).
    private static func removeEntries(in path: String) {
        for name in names(in: path) where name.hasSuffix(fileExtension) || name.hasPrefix(temporaryPrefix) {
            unlink((path as NSString).appendingPathComponent(name))
        }
    }

    /// The modification time of the file `info` describes, in seconds since 1970.
    private static func modificationTime(_ info: stat) -> TimeInterval {
        #if canImport(Darwin)
        return TimeInterval(info.st_mtimespec.tv_sec) + TimeInterval(info.st_mtimespec.tv_nsec) / 1e9
        #else
        return TimeInterval(info.st_mtim.tv_sec) + TimeInterval(info.st_mtim.tv_nsec) / 1e9
        #endif
    }

    /// The bytes of every file the store counts (for tests and the capacity check).
    var totalBytes: Int { index.withLock { $0.total } }

    /// The response stored under `key`, or `nil`; a damaged file is removed.
    func read(_ key: CacheKey) -> StoredResponse? {
        let name = key.fileName(salt: salt)
        let known = index.withLock { index -> Bool in
            guard index.files[name] != nil else { return false }
            index.clock += 1
            index.files[name]?.lastUse = index.clock
            return true
        }
        guard known else { return nil }
        let file = directory.appendingPathComponent(name)
        guard let data = try? Data(contentsOf: file) else {
            forget(name)
            return nil
        }
        guard let response = decode(data, key: key) else {
            // Truncated, altered or someone else's: a miss, and gone.
            forget(name)
            try? FileManager.default.removeItem(at: file)
            return nil
        }
        return response
    }

    /// Writes `response` under `key`, evicting the least recently used files first so that the total never passes
    /// the capacity; a file above `limit` bytes is not written (and the old one is removed).
    func write(_ response: StoredResponse, for key: CacheKey, limit: Int) {
        let name = key.fileName(salt: salt)
        guard let data = encode(response, key: key) else { return }
        let size = data.count
        let victims = index.withLock { index -> [String] in
            if let old = index.files.removeValue(forKey: name) { index.total -= old.size }
            guard size <= limit, size <= capacity else { return [name] }
            var victims = Self.evict(&index, toFit: size, capacity: capacity)
            victims.removeAll { $0 == name }
            index.clock += 1
            index.files[name] = Record(size: size, lastUse: index.clock)
            index.total += size
            return victims
        }
        remove(victims)
        guard size <= limit, size <= capacity else { return }
        if !Self.writeAtomically(data, to: directory.appendingPathComponent(name), in: directory) {
            forget(name)
        }
    }

    /// Removes the file of `key`.
    func remove(_ key: CacheKey) {
        let name = key.fileName(salt: salt)
        forget(name)
        remove([name])
    }

    /// Removes every file for `url`, whatever its partition.
    func remove(url: String) {
        let prefix = CacheKey.urlDigest(url, salt: salt) + "-"
        let names = index.withLock { index -> [String] in
            let names = index.files.keys.filter { $0.hasPrefix(prefix) }
            for name in names { index.total -= index.files.removeValue(forKey: name)?.size ?? 0 }
            return names
        }
        remove(names)
    }

    /// Removes every file (the salt stays).
    func removeAll() {
        let names = index.withLock { index -> [String] in
            let names = Array(index.files.keys)
            index.files = [:]
            index.total = salt.utf8.count
            return names
        }
        remove(names)
    }

    private func forget(_ name: String) {
        index.withLock { index in
            if let old = index.files.removeValue(forKey: name) { index.total -= old.size }
        }
    }

    private func remove(_ names: [String]) {
        for name in names { try? FileManager.default.removeItem(at: directory.appendingPathComponent(name)) }
    }

    /// Takes the least recently used files out of `index` until `size` more bytes fit; returns their names.
    private static func evict(_ index: inout Index, toFit size: Int, capacity: Int) -> [String] {
        guard index.total + size > capacity else { return [] }
        var victims: [String] = []
        for (name, record) in index.files.sorted(by: { $0.value.lastUse < $1.value.lastUse }) {
            guard index.total + size > capacity else { break }
            index.files[name] = nil
            index.total -= record.size
            victims.append(name)
        }
        return victims
    }

    // MARK: The file format

    /// `CRCH1`, the SHA-256 of the rest (32 bytes), the metadata's length (4 bytes, big-endian), the metadata (JSON),
    /// the body.
    private func encode(_ response: StoredResponse, key: CacheKey) -> Data? {
        let metadata = Metadata(
            key: keyCheck(key), status: response.status, headers: response.headers, requestTime: response.requestTime,
            responseTime: response.responseTime, varyValues: response.varyValues)
        guard let json = try? JSONEncoder().encode(metadata), json.count < Int(UInt32.max) else { return nil }
        var payload = Data(capacity: 4 + json.count + response.body.count)
        let length = UInt32(json.count)
        payload.append(contentsOf: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: length >> UInt32($0)) })
        payload.append(json)
        payload.append(response.body)
        var file = Self.magic
        file.append(contentsOf: SHA256Digest.hash(payload))
        file.append(payload)
        return file
    }

    private func decode(_ file: Data, key: CacheKey) -> StoredResponse? {
        let start = file.startIndex
        let header = Self.magic.count + 32
        guard file.count >= header + 4, file.prefix(Self.magic.count) == Self.magic else { return nil }
        let payload = file.subdata(in: (start + header)..<file.endIndex)
        guard SHA256Digest.hash(payload) == Array(file[(start + Self.magic.count)..<(start + header)]) else {
            return nil
        }
        let length = payload.prefix(4).reduce(0) { $0 << 8 | Int($1) }
        guard payload.count >= 4 + length else { return nil }
        let jsonStart = payload.startIndex + 4
        guard
            let metadata = try? JSONDecoder().decode(
                Metadata.self, from: payload.subdata(in: jsonStart..<(jsonStart + length))),
            metadata.key == keyCheck(key)
        else { return nil }
        return StoredResponse(
            status: metadata.status, headers: metadata.headers,
            body: payload.subdata(in: (jsonStart + length)..<payload.endIndex),
            requestTime: metadata.requestTime, responseTime: metadata.responseTime, varyValues: metadata.varyValues)
    }

    /// A salted digest of the whole key, kept in the file to tell a file from another key's under the same name.
    private func keyCheck(_ key: CacheKey) -> String {
        SHA256Digest.hex(salt + "\nkey\n" + key.url + "\n" + key.partition)
    }

    /// Writes `data` to a new owner-only temporary file in `directory`, then renames it to `file`.
    static func writeAtomically(_ data: Data, to file: URL, in directory: URL) -> Bool {
        let temporary = directory.appendingPathComponent(temporaryPrefix + UUID().uuidString)
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else { return false }
        let written = writeFully(descriptor, data) == nil
        closeDescriptor(descriptor)
        guard written, rename(temporary.path, file.path) == 0 else {
            unlink(temporary.path)
            return false
        }
        return true
    }
}
