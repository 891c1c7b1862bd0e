internal import CGStreamer
import CGstShim
import Synchronization

/// Transport-wide sequence numbers on a peer's outgoing RTP, written by us, and the
/// receiver's feedback on them read by us (`TransportFeedbackTracker`).
///
/// Why not GStreamer's own: in 1.22 rtpsession records a packet's transport-wide number
/// only from the one-byte header form, and our packets carry the pose in the two-byte
/// form (60 bytes; the pose wire format every reader depends on). So the number is
/// written here, in whichever form the packet already has, just as the packet leaves
/// the pacer (`SendPath`): its departure is what the receiver's arrival is compared
/// with. Retransmissions get their own number (they share the path).
///
/// Off until `enable`: only when the peer's answer kept the extension (`SessionDescription.
/// transportWideCCExtensionID`), since a receiver that did not negotiate it sends no feedback.
final class TransportSequencer: Sendable {
    /// The URI of the header extension (draft-holmer-rmcat-transport-wide-cc-extensions-01).
    static let extensionURI = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"

    private let tracker = Mutex(TransportFeedbackTracker())
    private let extensionID = Atomic<Int>(0)
    private let refused = Atomic<UInt64>(0)

    /// Numbers packets from now on with header extension `id` (1–255; 1–14 fit the one-byte form).
    func enable(id: Int) { extensionID.store(id, ordering: .releasing) }
    /// Feedback messages refused as malformed so far.
    var malformedFeedback: UInt64 { refused.load(ordering: .relaxed) }

    /// Writes the next number into the probe's buffer (made writable in place), and
    /// notes its departure now. Does nothing when off, when the buffer is no RTP, or when
    /// its header extension has a form the ID does not fit (no number is taken then: a
    /// number never sent would read as a packet lost).
    func stamp(_ info: UnsafeMutablePointer<GstPadProbeInfo>) {
        let id = extensionID.load(ordering: .acquiring)
        guard id > 0, let buffer = ProbeInfo.writableBuffer(info) else { return }
        var rtp = GstRTPBuffer()
        guard gst_rtp_buffer_map(buffer, GstMapFlags(GST_MAP_READ.rawValue | GST_MAP_WRITE.rawValue), &rtp) != 0 else { return }
        defer { gst_rtp_buffer_unmap(&rtp) }
        var bits: guint16 = 0, data: gpointer?, words: guint = 0
        let hasExtension = gst_rtp_buffer_get_extension_data(&rtp, &bits, &data, &words) != 0
        // The two-byte form when the packet has it (the pose's), else the one-byte form.
        let twoBytes = hasExtension && bits >> 4 == 0x100
        guard twoBytes || ((!hasExtension || bits == 0xBEDE) && id <= 14) else { return }
        let size = Int(gst_buffer_get_size(buffer))
        let seq = tracker.withLock { $0.assign(bytes: size, nowMicros: Int64(g_get_monotonic_time())) }
        var value: (UInt8, UInt8) = (UInt8(seq >> 8), UInt8(truncatingIfNeeded: seq))
        // Overwrite ours where a retransmission copied it from its original, else add it.
        var existing: gpointer?, existingSize: guint = 0, appBits: guint8 = 0
        let found = twoBytes
            ? gst_rtp_buffer_get_extension_twobytes_header(&rtp, &appBits, guint8(id), 0, &existing, &existingSize)
            : gst_rtp_buffer_get_extension_onebyte_header(&rtp, guint8(id), 0, &existing, &existingSize)
        withUnsafeBytes(of: &value) { bytes in
            if found != 0, existingSize >= 2, let existing {
                existing.copyMemory(from: bytes.baseAddress!, byteCount: 2)
            } else if twoBytes {
                _ = gst_rtp_buffer_add_extension_twobytes_header(&rtp, 0, guint8(id), bytes.baseAddress, 2)
            } else {
                _ = gst_rtp_buffer_add_extension_onebyte_header(&rtp, guint8(id), bytes.baseAddress, 2)
            }
        }
    }

    /// Reads one RTPFB FMT 15 packet's FCI; a malformed one is counted and dropped.
    func receive(fci: [UInt8]) {
        do throws(TransportFeedback.ParseError) {
            let feedback = try TransportFeedback(fci: fci)
            tracker.withLock { $0.receive(feedback, nowMicros: Int64(g_get_monotonic_time())) }
        } catch {
            refused.add(1, ordering: .relaxed)
        }
    }

    /// What the feedback said since the last call.
    func take() -> TransportFeedbackTracker.Summary { tracker.withLock { $0.take() } }
}
