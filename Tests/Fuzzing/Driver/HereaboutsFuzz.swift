import CLibFuzzer
import Foundation
import ImageFuzzing
import RequestFuzzing

/// `hereabouts-fuzz [requests|images] …`: fuzzes every service's request handling
/// through `FuzzedStack` (`requests`, the default), or image inspection and metadata
/// stripping through `ImageChecks` (`images`).
///
/// Built by `make fuzz` with `-sanitize=fuzzer,address -D FUZZING`, it hands its
/// other arguments to libFuzzer (`hereabouts-fuzz CORPUS -max_total_time=600`). Built
/// plainly, it replays the inputs in the files and folders it is given and reports
/// each one answered wrongly: exit 1 if any was (`-v`: how each was answered).
@main
enum HereaboutsFuzz {
    static func main() throws {
        var arguments = CommandLine.arguments
        let named = arguments.dropFirst().first.flatMap(FuzzTarget.init(rawValue:))
        if named != nil { arguments.remove(at: 1) }
        let target = named ?? .requests
        #if FUZZING
        var pointers: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        var argc = CInt(arguments.count)
        pointers.withUnsafeMutableBufferPointer { buffer in
            var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = buffer.baseAddress
            selected = target
            exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOne(data, size) })
        }
        #else
        let check: ([UInt8]) throws -> [String]
        switch target {
        case .requests:
            let stack = try FuzzedStack(freshFixtures: true)
            check = { try stack.check($0) }
        case .images:
            check = { [try ImageChecks.check($0)] }
        }
        var failed = 0
        let verbose = arguments.contains("-v")
        let paths = arguments.dropFirst().filter { $0 != "-v" }
        let inputs = try paths.flatMap(CorpusFiles.list)
        for file in inputs {
            do {
                let answers = try check(Array(try Data(contentsOf: file)))
                if verbose { print("\(file.lastPathComponent): \(answers.joined(separator: ", "))") }
            } catch {
                failed += 1
                print("\(file.path): \(error)")
            }
        }
        print("\(inputs.count) inputs, \(failed) answered wrongly")
        exit(failed == 0 ? 0 : 1)
        #endif
    }
}

enum FuzzTarget: String {
    case requests, images
}

#if FUZZING
/// Chosen before libFuzzer starts, read on its thread.
nonisolated(unsafe) private var selected = FuzzTarget.requests
/// Built on first use, inside libFuzzer's run (its threads are then counted as the run's).
nonisolated(unsafe) private var stack: FuzzedStack?

/// The callback for libFuzzer: a finding stops the run with the input saved.
private func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    switch selected {
    case .images:
        do {
            try ImageChecks.check(input)
        } catch {
            fatalError("an image was handled wrongly: \(error)")
        }
    case .requests:
        if stack == nil {
            do {
                stack = try FuzzedStack()
            } catch {
                fatalError("could not start the services: \(error)")
            }
        }
        do {
            try stack!.check(input)
        } catch {
            fatalError("a service answered wrongly: \(error)")
        }
    }
    return 0
}

/// libFuzzer's archive names this symbol even when its own `main` is not used.
@_cdecl("LLVMFuzzerTestOneInput")
public func LLVMFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(data, size)
}
#endif
