/// A point of a tree: a post's unit vector and its slot in the record store.
struct TreePoint: Sendable {
    var x: Double
    var y: Double
    var z: Double
    var slot: Int32
    /// The `WordSignature` of the post's words (0 for points that are not posts):
    /// it fills what would be padding, so a point stays 32 bytes.
    var words: UInt32

    init(_ vector: UnitVector, slot: Int32, words: UInt32 = 0) {
        x = vector.x
        y = vector.y
        z = vector.z
        self.slot = slot
        self.words = words
    }
}

/// An immutable k-d tree over unit vectors, built once from a set of points.
///
/// Nodes are stored as a heap (children of `n` at `2n+1`, `2n+2`), each with the
/// bounding box of its points and the range of `points` it covers. A node splits
/// its points at the median of its widest axis, so the tree is balanced and a leaf
/// holds at most `leafSize` points.
final class KDTree: Sendable {
    /// A node: the box around its points and the range of `points` it covers.
    ///
    /// The box is kept in `Float`, rounded outwards so that it still holds every
    /// point: a node is then 32 bytes and a node's two children (stored side by
    /// side) share a cache line or two rather than spanning three, which is what a
    /// search waits for as it walks down.
    struct Node: Sendable {
        private var x0: Float = 0, y0: Float = 0, z0: Float = 0
        private var x1: Float = 0, y1: Float = 0, z1: Float = 0
        var start: Int32 = 0
        var end: Int32 = 0

        init() {}

        init(min: (x: Double, y: Double, z: Double), max: (x: Double, y: Double, z: Double), start: Int32, end: Int32) {
            x0 = Self.below(min.x); y0 = Self.below(min.y); z0 = Self.below(min.z)
            x1 = Self.above(max.x); y1 = Self.above(max.y); z1 = Self.above(max.z)
            self.start = start
            self.end = end
        }

        var minX: Double { Double(x0) }
        var minY: Double { Double(y0) }
        var minZ: Double { Double(z0) }
        var maxX: Double { Double(x1) }
        var maxY: Double { Double(y1) }
        var maxZ: Double { Double(z1) }

        /// The squared distance from `v` to the nearest point of the box.
        @inline(__always)
        func distanceSquared(to v: UnitVector) -> Double {
            let dx = Swift.max(0, minX - v.x, v.x - maxX)
            let dy = Swift.max(0, minY - v.y, v.y - maxY)
            let dz = Swift.max(0, minZ - v.z, v.z - maxZ)
            return dx * dx + dy * dy + dz * dz
        }

        /// The largest `Float` not above `value`.
        private static func below(_ value: Double) -> Float {
            let rounded = Float(value)
            return Double(rounded) > value ? rounded.nextDown : rounded
        }

        /// The smallest `Float` not below `value`.
        private static func above(_ value: Double) -> Float {
            let rounded = Float(value)
            return Double(rounded) < value ? rounded.nextUp : rounded
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

    private init(points: [TreePoint], nodes: [Node]) {
        self.points = points
        self.nodes = nodes
    }

    /// The same tree with each point's slot set to its position: for posts laid out
    /// in the order of this tree's points.
    func numberedByPosition() -> KDTree {
        var points = points
        for position in points.indices { points[position].slot = Int32(position) }
        return KDTree(points: points, nodes: nodes)
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
        var low = (x: Double.infinity, y: Double.infinity, z: Double.infinity)
        var high = (x: -Double.infinity, y: -Double.infinity, z: -Double.infinity)
        for index in range {
            let p = points[index]
            low.x = min(low.x, p.x); high.x = max(high.x, p.x)
            low.y = min(low.y, p.y); high.y = max(high.y, p.y)
            low.z = min(low.z, p.z); high.z = max(high.z, p.z)
        }
        nodes[node] = Node(min: low, max: high, start: Int32(range.lowerBound), end: Int32(range.upperBound))
        guard range.count > leafSize, 2 * node + 2 < nodes.count else { return }
        let spreadX = high.x - low.x, spreadY = high.y - low.y, spreadZ = high.z - low.z
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

extension KDTree {
    func write(to writer: SnapshotWriter) {
        writer.write(array: points)
        writer.write(array: nodes)
    }

    convenience init(from reader: inout SnapshotReader) throws {
        let points: [TreePoint] = try reader.array()
        let nodes: [Node] = try reader.array()
        guard nodes.allSatisfy({ 0 <= $0.start && $0.start <= $0.end && Int($0.end) <= points.count }) else {
            throw IndexSnapshot.Unreadable(description: "a tree's node is out of range")
        }
        self.init(points: points, nodes: nodes)
    }
}
