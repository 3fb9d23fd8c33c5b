import Testing

@testable import CourierAsyncHTTPClient

@Suite("DeadlineHeap: the idle monitor's deadlines, earliest first")
struct DeadlineHeapTests {
    @Test("Set, move and remove keep the earliest at the top, against a plain sorted list")
    func againstSortedList() {
        var heap = DeadlineHeap<Int>()
        var expected: [Int: UInt64] = [:]
        // A fixed, scrambled walk over 64 keys: sets (new keys, earlier and later deadlines) and removals.
        for step in 0..<2_000 {
            let key = (step * 37 + step / 64) % 64
            switch (step * 7) % 3 {
            case 0, 1:
                let deadline = UInt64((step * 7_919 + 13) % 1_000)
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
