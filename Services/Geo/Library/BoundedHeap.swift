/// The best `capacity` elements seen, by an order given as "ranks before".
struct BoundedHeap<Element> {
    private var heap: [Element] = []
    let capacity: Int
    /// `before(a, b)`: a ranks before (is better than) b.
    private let before: (Element, Element) -> Bool

    init(capacity: Int, before: @escaping (Element, Element) -> Bool) {
        self.capacity = capacity
        self.before = before
        heap.reserveCapacity(min(capacity, 1024))
    }

    var isFull: Bool { heap.count >= capacity }
    /// The element that would leave first: the worst kept.
    var worst: Element? { heap.first }

    mutating func offer(_ element: Element) {
        if heap.count < capacity {
            heap.append(element)
            var child = heap.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard before(heap[parent], heap[child]) else { break }
                heap.swapAt(parent, child)
                child = parent
            }
        } else if capacity > 0, before(element, heap[0]) {
            heap[0] = element
            var parent = 0
            while true {
                let left = 2 * parent + 1, right = left + 1
                var worst = parent
                if left < heap.count, before(heap[worst], heap[left]) { worst = left }
                if right < heap.count, before(heap[worst], heap[right]) { worst = right }
                if worst == parent { break }
                heap.swapAt(parent, worst)
                parent = worst
            }
        }
    }

    /// The kept elements, best first.
    func sorted() -> [Element] { heap.sorted(by: before) }
}
