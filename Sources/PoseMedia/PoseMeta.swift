package import CGStreamer
import CGstShim
import PoseCastKit
import RTCSession

/// The pose meta (a custom GstMeta holding the encoded pose bytes) and the RTP
/// header extension that carries it, seen from Swift.
package enum PoseMeta {
    /// Attaches encoded pose bytes to a writable buffer (replacing any pose it had).
    package static func attach(_ bytes: [UInt8], to buffer: UnsafeMutablePointer<GstBuffer>) -> Bool {
        bytes.withUnsafeBufferPointer { pcg_buffer_set_pose(buffer, $0.baseAddress, gsize($0.count)) != 0 }
    }

    /// The pose bytes a buffer carries, or nil when it has no pose meta.
    package static func bytes(of buffer: UnsafeMutablePointer<GstBuffer>) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: Int(PCG_POSE_MAX_BYTES))
        let n = out.withUnsafeMutableBufferPointer { pcg_buffer_get_pose(buffer, $0.baseAddress, gsize($0.count)) }
        guard n >= 0 else { return nil }
        return Array(out.prefix(Int(n)))
    }
}

/// Registration of the pose RTP header extension, so payloaders can be given it and
/// depayloaders create it from the negotiated `extmap` URI.
public enum PoseHeaderExtension {
    public static let uri = PCG_POSE_EXT_URI
    /// The extmap id the publisher uses (any 1…255 works with the two-byte form).
    public static let defaultID: UInt32 = 1

    /// Initialises GStreamer if needed and registers the extension element (idempotent).
    public static func register() throws(RTCError) {
        try GStreamer.initialize()
        guard pcg_pose_hdrext_register() != 0 else {
            throw .invalidArgument("the pose RTP header extension could not be registered")
        }
    }

    /// A new extension instance for a payloader (or a test reading packets through it).
    package static func make(id: UInt32) throws(RTCError) -> PoseExtension {
        try register()
        guard let raw = pcg_pose_hdrext_new(guint(id)) else {
            throw .invalidArgument("the pose RTP header extension could not be created")
        }
        return PoseExtension(adopting: raw)
    }
}

/// The one way a pose header extension is held: this object owns one full reference,
/// released when it goes; a payloader it is added to takes a reference of its own.
package final class PoseExtension: @unchecked Sendable {
    /// Borrowed: valid while this object lives.
    package let raw: UnsafeMutablePointer<GstRTPHeaderExtension>

    /// Takes over a full reference (from `pcg_pose_hdrext_new`).
    init(adopting raw: UnsafeMutablePointer<GstRTPHeaderExtension>) { self.raw = raw }
    deinit { gst_object_unref(UnsafeMutableRawPointer(raw)) }

    /// Makes `payloader` write the pose of each frame into its packets.
    package func add(to payloader: Element) { pcg_payloader_add_extension(payloader.raw, raw) }

    /// Packets written with a pose, frames read, reads refused (oversized element or an
    /// unwritable buffer).
    package var counters: (written: UInt64, read: UInt64, refused: UInt64) {
        var written: guint64 = 0, read: guint64 = 0, refused: guint64 = 0
        pcg_pose_hdrext_counters(raw, &written, &read, &refused)
        return (UInt64(written), UInt64(read), UInt64(refused))
    }
}
