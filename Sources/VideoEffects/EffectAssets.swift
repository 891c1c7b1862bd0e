import Foundation

/// Where the effects' runtime and models are (`scripts/effects-setup` puts them in
/// `.build/effects`), and the precise error when one is missing.
public struct EffectAssets: Sendable, Hashable {
    public let directory: String

    public static let libraryFile = "libLiteRt.so"
    public static let segmentationModel = "selfie_segmentation.tflite"
    public static let landscapeSegmentationModel = "selfie_segmentation_landscape.tflite"
    public static let faceModel = "face_detection_short_range.tflite"
    public static let fullRangeFaceModel = "face_detection_full_range_sparse.tflite"
    /// What installs them.
    public static let installCommand = "bash scripts/effects-setup"

    public init(directory: String) { self.directory = directory }

    /// `explicit` (`--effects-dir`), else `$POSECAST_EFFECTS_DIR`, else the first
    /// `effects` folder found beside the executable's build folder (`.build/effects` for
    /// `.build/debug/posecast-publisher` and for the test bundle), else `.build/effects`
    /// under the working directory.
    public static func locate(explicit: String? = nil) -> EffectAssets {
        if let explicit { return EffectAssets(directory: explicit) }
        if let env = ProcessInfo.processInfo.environment["POSECAST_EFFECTS_DIR"], !env.isEmpty {
            return EffectAssets(directory: env)
        }
        let exe = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                      ?? CommandLine.arguments[0]).deletingLastPathComponent()
        var dir = exe
        for _ in 0..<4 {
            dir = dir.deletingLastPathComponent()
            let candidate = dir.appendingPathComponent("effects").path
            if FileManager.default.fileExists(atPath: candidate + "/" + libraryFile) { return EffectAssets(directory: candidate) }
        }
        return EffectAssets(directory: FileManager.default.currentDirectoryPath + "/.build/effects")
    }

    /// The path of `name`, checked to exist; the error names the file and the command
    /// that installs it.
    public func path(_ name: String) throws(EffectModelError) -> String {
        let path = directory + "/" + name
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw EffectModelError("\(path) is missing: run `\(Self.installCommand)` (or `bash scripts/setup`), or point --effects-dir / POSECAST_EFFECTS_DIR at a folder holding \(name)")
        }
        return path
    }

    /// Loads `model` with the library, both checked first.
    public func model(_ name: String) throws(EffectModelError) -> LiteRTModel {
        let library = try path(Self.libraryFile)
        return try LiteRTModel(library: library, model: try path(name))
    }
}
