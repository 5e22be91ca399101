/// A point of a tree: a post's unit vector and its slot in the record store.
struct TreePoint: Sendable {
    var x: Double
    var y: Double
    var z: Double
    var slot: Int32

    init(_ vector: UnitVector, slot: Int32) {
        x = vector.x
        y = vector.y
        z = vector.z
        self.slot = slot
    }
}

/// An immutable k-d tree over unit vectors, built once from a set of points.
///
/// Nodes are stored as a heap (children of `n` at `2n+1`, `2n+2`), each with the
/// bounding box of its points and the range of `points` it covers. A node splits
/// its points at the median of its widest axis, so the tree is balanced and a leaf
/// holds at most `leafSize` points.
final class KDTree: Sendable {
    struct Node: Sendable {
        var minX = 0.0, minY = 0.0, minZ = 0.0
        var maxX = 0.0, maxY = 0.0, maxZ = 0.0
        var start: Int32 = 0
        var end: Int32 = 0

        /// The squared distance from `v` to the nearest point of the box.
        @inline(__always)
        func distanceSquared(to v: UnitVector) -> Double {
            let dx = max(0, minX - v.x, v.x - maxX)
            let dy = max(0, minY - v.y, v.y - maxY)
            let dz = max(0, minZ - v.z, v.z - maxZ)
            return dx * dx + dy * dy + dz * dz
        }
    }

    static let leafSize = 16

    let points: [TreePoint]
    let nodes: [Node]

    var count: Int { points.count }

    init(points: [TreePoint]) {
        var points = points
        var levels = 1
        var size = points.count
        while size > Self.leafSize {
            size = (size + 1) / 2
            levels += 1
        }
        var nodes = [Node](repeating: Node(), count: (1 << levels) - 1)
        points.withUnsafeMutableBufferPointer { buffer in
            Self.build(node: 0, range: 0..<buffer.count, points: buffer, nodes: &nodes)
        }
        self.points = points
        self.nodes = nodes
    }

    func isLeaf(_ node: Int) -> Bool {
        let child = 2 * node + 1
        return child >= nodes.count || nodes[node].end - nodes[node].start <= Int32(Self.leafSize)
    }

    /// Calls `body` with every point whose squared chord to `center` may be within
    /// `bound` (and some just beyond it: the caller compares exactly).
    func forEach(near center: UnitVector, chordSquared bound: Double, _ body: (TreePoint) -> Void) {
        guard !points.isEmpty else { return }
        var stack: [Int] = [0]
        while let node = stack.popLast() {
            let box = nodes[node]
            guard box.distanceSquared(to: center) <= bound else { continue }
            if isLeaf(node) {
                for index in Int(box.start)..<Int(box.end) { body(points[index]) }
            } else {
                stack.append(2 * node + 2)
                stack.append(2 * node + 1)
            }
        }
    }

    /// Calls `body` with every point in a node that `overlaps` may hold.
    func forEach(where overlaps: (Node) -> Bool, _ body: (TreePoint) -> Void) {
        guard !points.isEmpty else { return }
        var stack: [Int] = [0]
        while let node = stack.popLast() {
            let box = nodes[node]
            guard overlaps(box) else { continue }
            if isLeaf(node) {
                for index in Int(box.start)..<Int(box.end) { body(points[index]) }
            } else {
                stack.append(2 * node + 2)
                stack.append(2 * node + 1)
            }
        }
    }

    /// The slot of the point nearest to `center` (the smaller slot on a tie), or nil
    /// for an empty tree.
    func nearest(to center: UnitVector) -> Int? {
        nearest(to: center, count: 1).first
    }

    /// The slots of the `count` points nearest to `center` by chord, nearest first
    /// (the smaller slot on a tie). Depth first, nearer child first, skipping boxes
    /// farther than the worst point kept once `count` are kept.
    func nearest(to center: UnitVector, count: Int) -> [Int] {
        guard !points.isEmpty, count > 0 else { return [] }
        var kept = BoundedHeap<(chord: Double, slot: Int32)>(capacity: count) { a, b in
            a.chord != b.chord ? a.chord < b.chord : a.slot < b.slot
        }
        var stack: [Int] = [0]
        while let node = stack.popLast() {
            let box = nodes[node]
            if kept.isFull, let worst = kept.worst, box.distanceSquared(to: center) > worst.chord { continue }
            if isLeaf(node) {
                for index in Int(box.start)..<Int(box.end) {
                    let point = points[index]
                    kept.offer((center.chordSquared(to: UnitVector(x: point.x, y: point.y, z: point.z)), point.slot))
                }
            } else {
                let left = 2 * node + 1, right = 2 * node + 2
                // Pushed last, popped first: the nearer child.
                if nodes[left].distanceSquared(to: center) <= nodes[right].distanceSquared(to: center) {
                    stack.append(right)
                    stack.append(left)
                } else {
                    stack.append(left)
                    stack.append(right)
                }
            }
        }
        return kept.sorted().map { Int($0.slot) }
    }

    private static func build(node: Int, range: Range<Int>, points: UnsafeMutableBufferPointer<TreePoint>, nodes: inout [Node]) {
        var box = Node(minX: .infinity, minY: .infinity, minZ: .infinity, maxX: -.infinity, maxY: -.infinity, maxZ: -.infinity,
                       start: Int32(range.lowerBound), end: Int32(range.upperBound))
        for index in range {
            let p = points[index]
            box.minX = min(box.minX, p.x); box.maxX = max(box.maxX, p.x)
            box.minY = min(box.minY, p.y); box.maxY = max(box.maxY, p.y)
            box.minZ = min(box.minZ, p.z); box.maxZ = max(box.maxZ, p.z)
        }
        nodes[node] = box
        guard range.count > leafSize, 2 * node + 2 < nodes.count else { return }
        let spreadX = box.maxX - box.minX, spreadY = box.maxY - box.minY, spreadZ = box.maxZ - box.minZ
        let axis = spreadX >= spreadY && spreadX >= spreadZ ? 0 : (spreadY >= spreadZ ? 1 : 2)
        let middle = (range.lowerBound + range.upperBound) / 2
        select(middle, in: range, axis: axis, points: points)
        build(node: 2 * node + 1, range: range.lowerBound..<middle, points: points, nodes: &nodes)
        build(node: 2 * node + 2, range: middle..<range.upperBound, points: points, nodes: &nodes)
    }

    @inline(__always)
    private static func key(_ point: TreePoint, _ axis: Int) -> Double {
        axis == 0 ? point.x : (axis == 1 ? point.y : point.z)
    }

    /// Reorders `range` so that the point at `k` is the one a sort by `axis` puts
    /// there, with no greater point before it and no smaller after (quickselect).
    private static func select(_ k: Int, in range: Range<Int>, axis: Int, points: UnsafeMutableBufferPointer<TreePoint>) {
        var low = range.lowerBound, high = range.upperBound - 1
        while high > low {
            // Median of three as the pivot keeps sorted input from going quadratic.
            let mid = low + (high - low) / 2
            if key(points[mid], axis) < key(points[low], axis) { points.swapAt(mid, low) }
            if key(points[high], axis) < key(points[low], axis) { points.swapAt(high, low) }
            if key(points[high], axis) < key(points[mid], axis) { points.swapAt(high, mid) }
            let pivot = key(points[mid], axis)
            var i = low, j = high
            while i <= j {
                while key(points[i], axis) < pivot { i += 1 }
                while key(points[j], axis) > pivot { j -= 1 }
                if i <= j {
                    points.swapAt(i, j)
                    i += 1
                    j -= 1
                }
            }
            if k <= j {
                high = j
            } else if k >= i {
                low = i
            } else {
                return
            }
        }
    }
}
