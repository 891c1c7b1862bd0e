import Foundation

/// Where the browser console's files (`Sources/Signaling/Console`: the page, its style and
/// its ES modules, docs/CONSOLE.md) are: the package's resource bundle, built next to the
/// executables (`PoseCast_Signaling.resources`).
public enum ConsoleFiles {
    /// Every file the page loads: a build without one of them is refused at start rather
    /// than served as a page that cannot load its modules.
    public static let names = ["index.html", "console.css", "console.js", "pose.js", "pose-worker.js", "janus.js",
                               "session.js", "words.js", "transport.js", "control.js", "frames.js", "pose-book.js",
                               "annotations.js", "camera-menu.js", "gestures.js", "zoom.js", "voice.js", "status.js"]

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
