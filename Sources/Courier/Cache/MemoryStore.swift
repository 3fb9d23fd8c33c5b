/// The in-memory part of a ``ResponseCache``: responses by key, least recently used first out, never more than
/// `capacity` bytes by ``StoredResponse/cost``. A value type kept under the cache's lock.
struct MemoryStore: Sendable {
    /// The most bytes held.
    let capacity: Int
    private(set) var totalCost = 0
    private var entries: [CacheKey: Node] = [:]
    /// The use order: a doubly linked list over `entries` by key, `head` the most recently used.
    private var head: CacheKey?
    private var tail: CacheKey?

    private struct Node: Sendable {
        var response: StoredResponse
        var cost: Int
        var previous: CacheKey?
        var next: CacheKey?
    }

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    var count: Int { entries.count }

    /// The response under `key`, now the most recently used.
    mutating func get(_ key: CacheKey) -> StoredResponse? {
        guard let node = entries[key] else { return nil }
        moveToFront(key)
        return node.response
    }

    /// Stores `response` under `key` (replacing what was there), evicting the least recently used ones until it
    /// fits; a response above `limit` bytes is not stored (and what was under `key` is removed).
    mutating func set(_ response: StoredResponse, for key: CacheKey, limit: Int) {
        remove(key)
        let cost = response.cost + key.url.utf8.count + key.partition.utf8.count
        guard cost <= limit, cost <= capacity else { return }
        while totalCost + cost > capacity, let oldest = tail { remove(oldest) }
        entries[key] = Node(response: response, cost: cost, previous: nil, next: head)
        if let head { entries[head]?.previous = key }
        head = key
        if tail == nil { tail = key }
        totalCost += cost
    }

    /// Removes the response under `key`.
    mutating func remove(_ key: CacheKey) {
        guard let node = entries.removeValue(forKey: key) else { return }
        if let previous = node.previous { entries[previous]?.next = node.next } else { head = node.next }
        if let next = node.next { entries[next]?.previous = node.previous } else { tail = node.previous }
        totalCost -= node.cost
    }

    /// Removes every response for `url`, whatever its partition.
    mutating func remove(url: String) {
        for key in entries.keys where key.url == url { remove(key) }
    }

    mutating func removeAll() {
        entries = [:]
        head = nil
        tail = nil
        totalCost = 0
    }

    private mutating func moveToFront(_ key: CacheKey) {
        guard head != key, let node = entries[key] else { return }
        if let previous = node.previous { entries[previous]?.next = node.next }
        if let next = node.next { entries[next]?.previous = node.previous } else { tail = node.previous }
        entries[key]?.previous = nil
        entries[key]?.next = head
        if let head { entries[head]?.previous = key }
        head = key
    }
}
