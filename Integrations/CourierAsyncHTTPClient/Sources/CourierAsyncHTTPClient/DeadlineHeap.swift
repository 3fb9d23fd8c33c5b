/// Deadlines by key, earliest first: a binary min-heap that knows where each key sits, so that setting, moving and
/// removing a deadline take O(log n), and finding the earliest O(1).
struct DeadlineHeap<Key: Hashable> {
    private var entries: [(deadline: UInt64, key: Key)] = []
    private var positions: [Key: Int] = [:]

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    /// The earliest deadline and its key.
    var earliest: (deadline: UInt64, key: Key)? { entries.first }

    /// The deadline of `key`, if it has one.
    func deadline(of key: Key) -> UInt64? {
        positions[key].map { entries[$0].deadline }
    }

    /// Sets `key`'s deadline, adding the key or moving it.
    mutating func set(_ key: Key, to deadline: UInt64) {
        if let position = positions[key] {
            let earlier = deadline < entries[position].deadline
            entries[position].deadline = deadline
            if earlier { siftUp(position) } else { siftDown(position) }
        } else {
            entries.append((deadline, key))
            positions[key] = entries.count - 1
            siftUp(entries.count - 1)
        }
    }

    /// Removes `key` and its deadline, if it has one.
    mutating func remove(_ key: Key) {
        guard let position = positions.removeValue(forKey: key) else { return }
        let last = entries.count - 1
        if position != last {
            entries.swapAt(position, last)
            positions[entries[position].key] = position
        }
        entries.removeLast()
        guard position < entries.count else { return }
        siftUp(position)
        siftDown(position)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].deadline < entries[parent].deadline else { return }
            exchange(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            var smallest = parent
            let left = 2 * parent + 1
            let right = left + 1
            if left < entries.count && entries[left].deadline < entries[smallest].deadline { smallest = left }
            if right < entries.count && entries[right].deadline < entries[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            exchange(parent, smallest)
            parent = smallest
        }
    }

    private mutating func exchange(_ first: Int, _ second: Int) {
        entries.swapAt(first, second)
        positions[entries[first].key] = first
        positions[entries[second].key] = second
    }
}
