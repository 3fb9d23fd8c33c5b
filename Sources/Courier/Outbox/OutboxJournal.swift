import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An append-only journal in segment files, written by one thread with group commit.
///
/// Appends from any number of callers are gathered while the previous batch is being flushed, then written with one
/// `write` and one `fdatasync`: concurrent enqueues share a flush. A durable append returns only once its batch is
/// on the disk. New segments are created atomically (temporary file, `fsync`, rename, directory `fsync`).
///
/// Old segments are deleted oldest first once nothing in them is live; once the journal is mostly dead, the live
/// records of the oldest segment are copied to the active one first, so one stuck entry never pins the disk.
// Every `var` below is guarded by `condition`; `activeFD`, `activeSegment` and `activeSize` are also read without it on
// the writer thread, the only thread that changes them once `open()` has returned. `activeSegmentSpoiled` belongs to
// the writer thread alone (and to `open()` before that thread starts).
final class OutboxJournal: @unchecked Sendable {
    private struct Pending {
        var record: Data
        var id: UUID
        var type: UInt8
        var continuation: CheckedContinuation<Void, any Error>?
        /// A live record copied forward from an old segment: it stays live only if its entry still is.
        var relocated = false
    }

    private struct Location {
        var segment: Int
        var range: Range<Int>
    }

    let directory: String
    private let segmentSize: Int
    private let condition = NSCondition()
    private var pending: [Pending] = []
    private var closed = false
    private var finished = false
    private var activeSegment = 0
    private var activeFD: Int32 = -1
    private var activeSize = 0
    private var segments: [Int] = []
    /// Where the latest copy of each live entry's records is.
    private var entryLocation: [UUID: Location] = [:]
    private var resultLocation: [UUID: Location] = [:]
    /// The bytes of the live records: the sum of the ranges in `entryLocation` and `resultLocation`.
    private var liveBytes = 0
    /// The size of each segment file.
    private var segmentBytes: [Int: Int] = [:]
    /// The live ids with a record in each segment.
    private var references: [Int: Set<UUID>] = [:]
    /// A failed write could not be undone: the active segment's tail holds bytes no offset accounts for, so nothing
    /// more is appended to it. Read and written on the writer thread only.
    private var activeSegmentSpoiled = false
    /// Test seam: the next write stores only this many bytes of its batch, then fails as with `ENOSPC`.
    private var injectedWriteFailure: Int?

    init(directory: String, segmentSize: Int) {
        self.directory = directory
        self.segmentSize = segmentSize
    }

    /// The file name of segment `number`: `journal-`, the number in at least 12 decimal digits, `.log`. Built from the
    /// 64-bit value (a `%012d` format once wrapped past `Int32.max` into `journal--02147483648.log`).
    static func name(_ number: Int) -> String {
        let digits = String(number)
        return "journal-" + String(repeating: "0", count: max(0, 12 - digits.count)) + digits + ".log"
    }

    /// Segment numbers above this are renumbered at opening, far from overflowing `Int`.
    static let largestSegmentNumber = 1 << 40

    private func path(_ segment: Int) -> String {
        (directory as NSString).appendingPathComponent(Self.name(segment))
    }

    /// Makes the next write store only `bytes` bytes of its batch and then fail with `ENOSPC`, as on a full disk.
    func failNextWrite(afterBytes bytes: Int) {
        condition.lock()
        injectedWriteFailure = bytes
        condition.unlock()
    }

    /// The segment files, by number. A name that is not a sane segment number (not decimal digits, not in canonical
    /// form, or above ``largestSegmentNumber``, such as `journal--02147483648.log` from the old `Int32` format) is
    /// renamed to the next free number after the others, so its records are read, never overwritten or ignored.
    private func segmentFiles() throws(OutboxError) -> [(number: Int, name: String)] {
        var sane: [(number: Int, name: String)] = []
        var odd: [(order: Int, name: String)] = []
        for name in OutboxFiles.files(in: directory, suffix: ".log") where name.hasPrefix("journal-") {
            let digits = name.dropFirst(8).dropLast(4)
            let number = digits.allSatisfy { $0.isASCII && $0.isNumber } ? Int(digits) : nil
            if let number, number <= Self.largestSegmentNumber, Self.name(number) == name {
                sane.append((number, name))
            } else {
                odd.append((number ?? .max, name))
            }
        }
        guard !odd.isEmpty else { return sane.sorted { $0.number < $1.number } }
        var next = (sane.map(\.number).max() ?? 0) + 1
        for (_, name) in odd.sorted(by: { ($0.order, $0.name) < ($1.order, $1.name) }) {
            let target = path(next)
            guard access(target, F_OK) != 0 else { throw OutboxFiles.error("rename", target, EEXIST) }
            guard rename((directory as NSString).appendingPathComponent(name), target) == 0 else {
                throw OutboxFiles.error("rename", target)
            }
            sane.append((next, Self.name(next)))
            next += 1
        }
        try OutboxFiles.syncDirectory(directory)
        return sane.sorted { $0.number < $1.number }
    }

    /// Reads every segment, sets damaged ones aside in `quarantine`, and starts the writer thread.
    func open() throws(OutboxError) -> JournalContents {
        try OutboxFiles.makeDirectory(directory)
        var contents = JournalContents()
        var done: Set<UUID> = []
        var seen: [(Int, JournalRecord, Range<Int>)] = []
        // A temporary file is what a crash during an atomic write leaves: its target still has the old content.
        for name in OutboxFiles.files(in: directory, suffix: ".tmp") {
            unlink((directory as NSString).appendingPathComponent(name))
        }
        for (number, name) in try segmentFiles() {
            let path = path(number)
            // A file that cannot be opened or read now (EACCES, EIO, EMFILE, a directory in its place) is not damaged:
            // opening fails and the file stays where it is, so its entries come back once it can be read.
            let data = try OutboxFiles.read(path)
            var (records, damage) = JournalFormat.parse(data)
            if let damage {
                // Keep the damaged original aside, then replace the segment atomically with its intact records.
                let intact = records.reduce(into: Data()) { $0.append(data[$1.1]) }
                quarantine(name, reason: damage, recovered: records.filter { $0.0.type == 1 }.count, into: &contents)
                try OutboxFiles.writeAtomically(intact, to: path)
                var offset = 0
                records = records.map { record, range in
                    defer { offset += range.count }
                    return (record, offset..<(offset + range.count))
                }
            }
            segments.append(number)
            segmentBytes[number] = damage == nil ? data.count : records.last?.1.upperBound ?? 0
            for (record, range) in records { seen.append((number, record, range)) }
        }
        for (_, record, _) in seen { if case .done(let id) = record { done.insert(id) } }
        for (segment, record, range) in seen where !done.contains(record.id) {
            switch record {
            case .entry(let entry):
                if contents.entries[entry.id] == nil { contents.entries[entry.id] = entry }
                entryLocation[entry.id] = Location(segment: segment, range: range)
            case .result(let id, let result):
                contents.results[id] = result
                resultLocation[id] = Location(segment: segment, range: range)
            case .done:
                continue
            }
            references[segment, default: []].insert(record.id)
        }
        liveBytes = (entryLocation.values.map(\.range.count) + resultLocation.values.map(\.range.count)).reduce(0, +)
        // A result for an entry that is gone (relocated and finished) is meaningless.
        for id in contents.results.keys where contents.entries[id] == nil { contents.results[id] = nil }
        try startSegment((segments.max() ?? 0) + 1)
        let thread = Thread { [self] in run() }
        thread.name = "Courier.Outbox.journal"
        thread.start()
        return contents
    }

    /// Copies the damaged segment `name` to the `quarantine` folder and records it in `contents`.
    private func quarantine(
        _ name: String, reason: String, recovered: Int, into contents: inout JournalContents
    ) {
        let folder = ((directory as NSString).deletingLastPathComponent as NSString).appendingPathComponent(
            "quarantine")
        try? OutboxFiles.makeDirectory(folder)
        let stamp = Int(Date().timeIntervalSince1970 * 1000)
        let target = (folder as NSString).appendingPathComponent("\(stamp)-\(name)")
        let source = (directory as NSString).appendingPathComponent(name)
        if let data = try? OutboxFiles.read(source) {
            try? OutboxFiles.writeAtomically(data, to: target)
        }
        contents.quarantined.append((name, reason, recovered))
    }

    /// Creates the next segment atomically and makes it the one appends go to. Called before the thread starts, or
    /// on the writer thread.
    private func startSegment(_ number: Int) throws(OutboxError) {
        let path = path(number)
        try OutboxFiles.writeAtomically(Data(), to: path)
        let fd = try OutboxFiles.openForAppending(path)
        if activeFD >= 0 { closeDescriptor(activeFD) }
        condition.lock()
        activeFD = fd
        activeSegment = number
        activeSize = 0
        activeSegmentSpoiled = false
        segmentBytes[number] = 0
        segments.append(number)
        condition.unlock()
    }

    /// Appends `record`; when `durable`, returns once it is on the disk.
    func append(_ record: JournalRecord, durable: Bool) async throws {
        let data = try record.framed()
        try await append(framed: data, id: record.id, type: record.type, durable: durable)
    }

    /// Appends `record` with the next batch, without waiting for it to reach the disk.
    func appendWithoutWaiting(_ record: JournalRecord) throws {
        try enqueue(Pending(record: try record.framed(), id: record.id, type: record.type, continuation: nil))
    }

    func append(framed data: Data, id: UUID, type: UInt8, durable: Bool) async throws {
        guard durable else {
            try enqueue(Pending(record: data, id: id, type: type, continuation: nil))
            return
        }
        try await withCheckedThrowingContinuation { continuation in
            do {
                try enqueue(Pending(record: data, id: id, type: type, continuation: continuation))
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }

    private func enqueue(_ item: Pending) throws {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { throw OutboxError.closed }
        pending.append(item)
        if item.type == 3 { forget(item.id) }
        condition.signal()
    }

    /// Drops `id` from the live set (its done record is being written). Under `condition`.
    private func forget(_ id: UUID) {
        for location in [entryLocation.removeValue(forKey: id), resultLocation.removeValue(forKey: id)] {
            if let location {
                references[location.segment]?.remove(id)
                liveBytes -= location.range.count
            }
        }
    }

    /// Stops taking appends, writes what is pending and stops the writer thread.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        while !finished { condition.wait() }
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while pending.isEmpty && !closed { condition.wait() }
            if pending.isEmpty {
                if activeFD >= 0 { closeDescriptor(activeFD) }
                activeFD = -1
                finished = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let batch = pending
            pending = []
            condition.unlock()
            var failure: (any Error)?
            do {
                try write(batch)
            } catch {
                failure = error
            }
            for item in batch {
                guard let continuation = item.continuation else { continue }
                if let failure { continuation.resume(throwing: failure) } else { continuation.resume() }
            }
            if failure == nil { compact() }
        }
    }

    /// Writes `batch` to the active segment (rolling over first if it is full and `rollingOver`) and flushes it once.
    ///
    /// A write that fails leaves the segment as it was: its partial bytes are cut off again, so the offsets stay
    /// true and no later record is read from the wrong place. If even that fails, the segment takes no more appends
    /// and the next batch starts a new one (the tail is then reported as damage at the next opening, with every
    /// intact record kept).
    private func write(_ batch: [Pending], rollingOver: Bool = true) throws {
        if activeSegmentSpoiled || (rollingOver && activeSize >= segmentSize) {
            try startSegment(activeSegment + 1)
        }
        var data = Data()
        data.reserveCapacity(batch.reduce(0) { $0 + $1.record.count })
        var ranges: [Range<Int>] = []
        for item in batch {
            ranges.append((activeSize + data.count)..<(activeSize + data.count + item.record.count))
            data.append(item.record)
        }
        let segmentPath = path(activeSegment)
        condition.lock()
        let failAfter = injectedWriteFailure
        injectedWriteFailure = nil
        condition.unlock()
        do {
            if let failAfter {
                try OutboxFiles.writeAll(activeFD, data.prefix(failAfter), path: segmentPath)
                throw OutboxFiles.error("write", segmentPath, ENOSPC)
            }
            try OutboxFiles.writeAll(activeFD, data, path: segmentPath)
            try OutboxFiles.syncData(activeFD, path: segmentPath)
        } catch {
            if !OutboxFiles.truncate(activeFD, to: activeSize) { activeSegmentSpoiled = true }
            throw error
        }
        condition.lock()
        activeSize += data.count
        segmentBytes[activeSegment] = activeSize
        for (item, range) in zip(batch, ranges) {
            let location = Location(segment: activeSegment, range: range)
            if item.relocated {
                if item.type == 1, let old = entryLocation[item.id] {
                    entryLocation[item.id] = location
                    liveBytes += range.count - old.range.count
                }
                if item.type == 2, let old = resultLocation[item.id] {
                    resultLocation[item.id] = location
                    liveBytes += range.count - old.range.count
                }
                if entryLocation[item.id] != nil || resultLocation[item.id] != nil {
                    references[activeSegment, default: []].insert(item.id)
                }
                continue
            }
            switch item.type {
            case 1 where !isForgotten(item.id, batch: batch):
                liveBytes += range.count - (entryLocation.updateValue(location, forKey: item.id)?.range.count ?? 0)
                references[activeSegment, default: []].insert(item.id)
            case 2 where !isForgotten(item.id, batch: batch):
                liveBytes += range.count - (resultLocation.updateValue(location, forKey: item.id)?.range.count ?? 0)
                references[activeSegment, default: []].insert(item.id)
            default:
                break
            }
        }
        condition.unlock()
    }

    /// Whether a done record for `id` is in `batch` (then its other records in the batch are not live).
    private func isForgotten(_ id: UUID, batch: [Pending]) -> Bool {
        batch.contains { $0.type == 3 && $0.id == id }
    }

    /// Deletes the oldest segments once nothing in them is live, copying a few live records forward if needed.
    ///
    /// Every pass deletes one segment and creates none: copied records go to the active segment even past
    /// `segmentSize` (the next batch rolls over). So compaction ends, and the writer gets back to its callers. (It
    /// used to roll over while copying: with more live records than two segments hold, as after a crash with many
    /// entries unsent, each copy filled a new segment and the writer copied records forward for ever.)
    ///
    /// Records are copied forward whenever the journal is mostly dead: more than twice its live bytes plus two
    /// segments. So the journal stays within about `2 × live + 3 × segmentSize` bytes whatever pins the oldest
    /// segment, and copying never outruns what it frees. (It used to copy only out of a segment at most half live: a
    /// small oldest segment holding one stuck entry, as a restart leaves, was never copied, and every segment after it
    /// was kept too; 300 handled entries of 1 MiB left 406 MB.)
    private func compact() {
        while true {
            condition.lock()
            guard let oldest = segments.min(), oldest != activeSegment else {
                condition.unlock()
                return
            }
            let live = references[oldest] ?? []
            let count = segments.count
            let moves: [(UUID, Location?, Location?)] = live.map { ($0, entryLocation[$0], resultLocation[$0]) }
            let mostlyDead = segmentBytes.values.reduce(0, +) > 2 * liveBytes + 2 * segmentSize
            condition.unlock()
            if !live.isEmpty {
                // Copy live records forward only when the journal holds at least three segments, mostly dead.
                guard count >= 3, mostlyDead else { return }
                guard (try? relocate(moves, from: oldest)) != nil else { return }
            }
            unlink(path(oldest))
            condition.lock()
            segments.removeAll { $0 == oldest }
            references[oldest] = nil
            segmentBytes[oldest] = nil
            condition.unlock()
        }
    }

    private func relocate(_ moves: [(UUID, Location?, Location?)], from segment: Int) throws {
        let data = try OutboxFiles.read(path(segment))
        var batch: [Pending] = []
        for (id, entry, result) in moves {
            if let entry, entry.segment == segment {
                batch.append(Pending(record: data[entry.range], id: id, type: 1, continuation: nil, relocated: true))
            }
            if let result, result.segment == segment {
                batch.append(Pending(record: data[result.range], id: id, type: 2, continuation: nil, relocated: true))
            }
        }
        guard !batch.isEmpty else { return }
        try write(batch, rollingOver: false)
    }
}
