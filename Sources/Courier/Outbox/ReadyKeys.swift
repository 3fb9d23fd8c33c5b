import Foundation

/// A min-heap of ordering keys by the sequence number of their head entry.
struct ReadyKeys: Sendable {
    private var items: [(sequence: UInt64, key: String)] = []

    mutating func insert(_ sequence: UInt64, _ key: String) {
        items.append((sequence, key))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].sequence < items[parent].sequence else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func popMin() -> (UInt64, String)? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count, items[left].sequence < items[smallest].sequence { smallest = left }
            if right < items.count, items[right].sequence < items[smallest].sequence { smallest = right }
            guard smallest != parent else { break }
            items.swapAt(parent, smallest)
            parent = smallest
        }
        return (top.sequence, top.key)
    }
}
