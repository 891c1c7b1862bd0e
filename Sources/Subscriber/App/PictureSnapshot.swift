import Foundation
import Imaging
import PoseMedia
import Synchronization

/// `snapshot PATH`: the next decoded picture (what the expert sees, the publisher's
/// annotations drawn in) written as a PNG. Needs the pictures copied out of the decoder
/// (`--snapshots` or `--check-markers`): `observe` runs on the streaming thread for each.
final class PictureSnapshot: Sendable {
    private let pending = Mutex<String?>(nil)
    private let done: @Sendable (Result<(path: String, frameId: UInt32?), SnapshotError>) -> Void

    struct SnapshotError: Error, CustomStringConvertible { let description: String }

    init(done: @escaping @Sendable (Result<(path: String, frameId: UInt32?), SnapshotError>) -> Void) { self.done = done }

    /// Asks for the next picture at `path` (a request still waiting is replaced).
    func request(_ path: String) { pending.withLock { $0 = path } }

    func observe(_ picture: DecodedPicture) {
        guard let path = pending.withLock({ p -> String? in defer { p = nil }; return p }) else { return }
        // The encoding and the write are off the streaming thread.
        DispatchQueue.global(qos: .utility).async { [done] in
            do {
                var image = try I420Image(width: picture.width, height: picture.height)
                image.bytes = picture.y + picture.u + picture.v
                let png = PNGWriter.encode(rgb: image.rgbBytes(), width: picture.width, height: picture.height)
                try Data(png).write(to: URL(fileURLWithPath: path))
                done(.success((path, picture.frame.pose?.frameID)))
            } catch {
                done(.failure(SnapshotError(description: "snapshot \(path): \(error)")))
            }
        }
    }
}
