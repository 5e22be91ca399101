import Foundation

/// Memory the process freed but the C library still holds.
enum FreedMemory {
    /// Gives freed pages back to the system (glibc's `malloc_trim`), after work that
    /// freed much at once: loading, or merging large trees. Else they stay in the
    /// malloc arenas and count against geo for as long as it runs.
    ///
    /// Looked up at run time: Swift's Glibc module does not export it, and another C
    /// library may not have it (then this does nothing).
    static func giveBack() {
        guard let trim = mallocTrim else { return }
        _ = trim(0)
    }

    private typealias MallocTrim = @convention(c) (Int) -> Int32
    private static let mallocTrim: MallocTrim? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim")
        .map { unsafeBitCast($0, to: MallocTrim.self) }
}
