import CLibFuzzer
import Foundation
import RequestFuzzing

/// `hereabouts-fuzz`: fuzzes every service's request handling through `FuzzedStack`.
///
/// Built by `make fuzz` with `-sanitize=fuzzer,address -D FUZZING`, it hands its
/// arguments to libFuzzer (`hereabouts-fuzz CORPUS -max_total_time=600`). Built
/// plainly, it replays the inputs in the files and folders it is given and reports
/// each one a service answered wrongly: exit 1 if any did (`-v`: how each was answered).
@main
enum HereaboutsFuzz {
    static func main() throws {
        #if FUZZING
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOne(data, size) })
        #else
        let stack = try FuzzedStack(freshFixtures: true)
        var failed = 0
        let verbose = CommandLine.arguments.contains("-v")
        let inputs = try CommandLine.arguments.dropFirst().filter { $0 != "-v" }.flatMap(CorpusFiles.list)
        for file in inputs {
            do {
                let answers = try stack.check(Array(try Data(contentsOf: file)))
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

#if FUZZING
/// Built on first use, inside libFuzzer's run (its threads are then counted as the run's).
nonisolated(unsafe) private var stack: FuzzedStack?

/// The callback for libFuzzer: a finding stops the run with the input saved.
private func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    if stack == nil {
        do {
            stack = try FuzzedStack()
        } catch {
            fatalError("could not start the services: \(error)")
        }
    }
    let input = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    do {
        try stack!.check(input)
    } catch {
        fatalError("a service answered wrongly: \(error)")
    }
    return 0
}

/// libFuzzer's archive names this symbol even when its own `main` is not used.
@_cdecl("LLVMFuzzerTestOneInput")
public func LLVMFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(data, size)
}
#endif
