import CLiteRT
import Synchronization

/// Why a model could not be used, with what to do about it.
public struct EffectModelError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// One float32 TensorFlow Lite model run on the CPU by LiteRT (`libLiteRt.so`, loaded at
/// run time by `CLiteRT`). Owns its LiteRT objects and frees them in `deinit`. Not
/// thread-safe: one streaming thread runs it (the class is `@unchecked Sendable` so it can
/// be handed to that thread).
public final class LiteRTModel: @unchecked Sendable {
    public let path: String
    public let inputShapes: [[Int]]
    public let outputShapes: [[Int]]
    public let outputNames: [String]
    private let handle: OpaquePointer

    /// Loads the library (once per process) and the model, single-threaded.
    public init(library: String, model: String, threads: Int32 = 1) throws(EffectModelError) {
        var error = [CChar](repeating: 0, count: 512)
        guard pc_litert_load_library(library, &error, error.count) == 0 else {
            throw EffectModelError("cannot load LiteRT: \(Self.text(error))")
        }
        guard let m = pc_litert_model_open(model, threads, &error, error.count) else {
            throw EffectModelError("cannot open the model: \(Self.text(error))")
        }
        handle = m
        path = model
        func shapes(_ count: Int32, _ get: (Int32, UnsafeMutablePointer<Int32>, Int32) -> Int32) -> [[Int]] {
            (0..<count).map { i in
                var dims = [Int32](repeating: 0, count: Int(PC_LITERT_MAX_RANK))
                let rank = get(i, &dims, PC_LITERT_MAX_RANK)
                return rank < 0 ? [] : dims.prefix(Int(rank)).map(Int.init)
            }
        }
        inputShapes = shapes(pc_litert_model_input_count(m)) { pc_litert_model_input_shape(m, $0, $1, $2) }
        outputShapes = shapes(pc_litert_model_output_count(m)) { pc_litert_model_output_shape(m, $0, $1, $2) }
        outputNames = (0..<pc_litert_model_output_count(m)).map { i in
            pc_litert_model_output_name(m, i).map { String(cString: $0) } ?? ""
        }
    }

    deinit { pc_litert_model_close(handle) }

    /// A C message buffer as text.
    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Input `index`'s memory, to fill before `run()` (the product of its shape, float32).
    public func input(_ index: Int) -> UnsafeMutableBufferPointer<Float> {
        let count = inputShapes[index].reduce(1, *)
        return UnsafeMutableBufferPointer(start: pc_litert_model_input(handle, Int32(index)), count: count)
    }

    /// Output `index` after a successful `run()`, valid until the next.
    public func output(_ index: Int) -> UnsafeBufferPointer<Float> {
        let count = outputShapes[index].reduce(1, *)
        return UnsafeBufferPointer(start: pc_litert_model_output(handle, Int32(index)), count: count)
    }

    public func run() throws(EffectModelError) {
        var error = [CChar](repeating: 0, count: 512)
        guard pc_litert_model_run(handle, &error, error.count) == 0 else {
            throw EffectModelError("inference failed (\(path)): \(Self.text(error))")
        }
    }
}
