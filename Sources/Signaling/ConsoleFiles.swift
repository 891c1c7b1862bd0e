import Foundation

/// Where the browser console's files (`Sources/Signaling/Console`: index.html, console.js,
/// pose.js, pose-worker.js, janus.js, console.css) are: the package's resource bundle, built next to
/// the executables (`PoseCast_Signaling.resources`).
public enum ConsoleFiles {
    public static let names = ["index.html", "console.js", "console.css", "pose.js", "pose-worker.js", "janus.js"]

    /// The folder holding them; throws, naming what is missing, when the bundle is not
    /// where the executable expects it (a binary copied without its resources).
    public static func directory() throws(SignalingServerError) -> String {
        guard let path = Bundle.module.path(forResource: "Console", ofType: nil) else {
            throw .invalidConfiguration("the console's files are not in \(Bundle.module.bundlePath): "
                                        + "copy the executable with its PoseCast_Signaling.resources folder")
        }
        let missing = names.filter { !FileManager.default.fileExists(atPath: path + "/" + $0) }
        guard missing.isEmpty else {
            throw .invalidConfiguration("the console folder \(path) lacks \(missing.joined(separator: ", "))")
        }
        return path
    }
}
