import Testing

@testable import CourierAsyncHTTPClient

@Suite("DeadlineHeap: the idle monitor's deadlines, earliest first")
struct DeadlineHeapTests {
    @Test("Set, move and remove keep the earliest at the top, against a plain sorted list")
    func againstSortedList() {
        var heap = DeadlineHeap<Int>()
        var expected: [Int: UInt64] = [:]
        var generator = SplitMix(seed: 44)
        for step in 0..<2_000 {
            let key = Int(generator.next() % 64)
            switch generator.next() % 3 {
            case 0, 1:
                let deadline = generator.next() % 1_000
                heap.set(key, to: deadline)
                expected[key] = deadline
            default:
                heap.remove(key)
                expected[key] = nil
            }
            #expect(heap.count == expected.count, "step \(step)")
            #expect(heap.earliest?.deadline == expected.values.min(), "step \(step)")
            #expect(heap.deadline(of: key) == expected[key], "step \(step)")
        }
        // Draining takes the deadlines in order.
        var drained: [UInt64] = []
        while let (deadline, key) = heap.earliest {
            drained.append(deadline)
            heap.remove(key)
        }
        #expect(drained == expected.values.sorted())
        #expect(heap.isEmpty)
    }
}

/// A small deterministic generator, so that a failure repeats.
private struct SplitMix {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
