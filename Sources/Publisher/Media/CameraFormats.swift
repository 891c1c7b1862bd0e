import CameraControl
internal import CGStreamer
import Glibc
import RTCSession

/// A V4L2 camera's modes as `v4l2src` reports them (its source pad's caps once the device
/// is open), the choice among them, and the elements that capture in the chosen mode.
///
/// Why caps rather than V4L2's own enumeration ioctls: the caps are what `v4l2src` will
/// negotiate, with its own handling of drivers' quirks (stepwise sizes, odd intervals);
/// and a recorded caps string (`gst-device-monitor-1.0` prints one per camera) replays a
/// real camera in tests.
public enum CameraFormats {
    /// The modes in a caps string (a recorded camera, or `v4l2src`'s), or nil when GStreamer
    /// cannot parse it.
    public static func modes(capsText: String) -> [CaptureMode]? {
        guard let caps = gst_caps_from_string(capsText) else { return nil }
        defer { gst_caps_unref(caps) }
        return modes(caps)
    }

    /// The modes of the camera at `device`: opens it (READY, nothing captured) on the
    /// calling thread, reads what its source pad can give and closes it. Not for the async
    /// pool (opening a device blocks).
    public static func probe(device: String) throws(RTCError) -> [CaptureMode] {
        guard access(device, F_OK) == 0 else {
            throw .deviceMissing(path: device, hint: "no camera there: use `--source test` (videotestsrc) instead")
        }
        let src = try ElementFactory.make("v4l2src")
        src.set("device", device)
        guard src.readyOnThisThread() else {
            src.stopOnThisThread()
            throw .invalidArgument("\(device) is not a camera v4l2src can open (not a video capture device, or in use by another program)")
        }
        defer { src.stopOnThisThread() }
        guard let pad = src.staticPad("src"), let caps = gst_pad_query_caps(pad.raw, nil) else { return [] }
        defer { gst_caps_unref(caps) }
        return modes(caps)
    }

    /// The caps to ask of `v4l2src` for `choice`.
    public static func capsText(_ choice: CaptureFormatChoice) -> String {
        let size = "width=\(choice.mode.width),height=\(choice.mode.height),framerate=\(choice.rate.numerator)/\(choice.rate.denominator)"
        switch choice.mode.encoding {
        case .mjpeg: return "image/jpeg,\(size)"
        case .raw(let format): return "video/x-raw,format=\(format),\(size)"
        case .other(let type): return "\(type),\(size)"
        }
    }

    /// `v4l2src` in the chosen mode, up to raw video the publisher's converter takes: a caps
    /// filter, and for MJPEG its decoder. Without a choice (a device that listed nothing
    /// usable, or could not be probed) `v4l2src` negotiates on its own.
    static func captureChain(device: String, choice: CaptureFormatChoice?) throws(RTCError) -> [Element] {
        let src = try ElementFactory.make("v4l2src", name: "source")
        src.set("device", device)
        guard let choice else { return [src] }
        let filter = try ElementFactory.make("capsfilter", name: "cameracaps")
        filter.set("caps", capsText(choice))
        guard case .mjpeg = choice.mode.encoding else { return [src, filter] }
        return [src, filter, try ElementFactory.make("jpegdec", name: "cameradecoder")]
    }

    // MARK: caps walking

    private static func modes(_ caps: UnsafeMutablePointer<GstCaps>) -> [CaptureMode] {
        var found: [CaptureMode] = []
        for i in 0..<gst_caps_get_size(caps) {
            guard let s = gst_caps_get_structure(caps, i) else { continue }
            let mediaType = String(cString: gst_structure_get_name(s))
            let encodings: [CaptureMode.Encoding]
            switch mediaType {
            case "video/x-raw": encodings = strings(gst_structure_get_value(s, "format")).map { .raw(format: $0) }
            case "image/jpeg": encodings = [.mjpeg]
            default: encodings = [.other(mediaType: mediaType)]
            }
            let widths = ints(gst_structure_get_value(s, "width")), heights = ints(gst_structure_get_value(s, "height"))
            let rates = fractions(gst_structure_get_value(s, "framerate"))
            for encoding in encodings {
                for w in widths { for h in heights { found.append(CaptureMode(encoding: encoding, width: w, height: h, rates: rates)) } }
            }
        }
        // A device lists the same mode once per colorimetry or interlace mode: one each.
        var seen = Set<CaptureMode>()
        return found.filter { seen.insert($0).inserted }
    }

    private static func typeName(_ value: UnsafePointer<GValue>) -> String { String(cString: g_type_name(value.pointee.g_type)) }

    /// The members of a list value, or the value itself.
    private static func members(_ value: UnsafePointer<GValue>?) -> [UnsafePointer<GValue>] {
        guard let value else { return [] }
        guard typeName(value) == "GstValueList" else { return [value] }
        return (0..<gst_value_list_get_size(value)).compactMap { gst_value_list_get_value(value, $0) }
    }

    private static func strings(_ value: UnsafePointer<GValue>?) -> [String] {
        members(value).compactMap { v in typeName(v) == "gchararray" ? g_value_get_string(v).map { String(cString: $0) } : nil }
    }

    /// Sizes: an int each; a stepwise range gives its largest (the camera's full view;
    /// the publisher scales down).
    private static func ints(_ value: UnsafePointer<GValue>?) -> [Int] {
        members(value).compactMap { v in
            switch typeName(v) {
            case "gint": Int(g_value_get_int(v))
            case "GstIntRange": Int(gst_value_get_int_range_max(v))
            default: nil
            }
        }
    }

    /// Rates: a fraction each; a range gives its fastest end.
    private static func fractions(_ value: UnsafePointer<GValue>?) -> [CaptureMode.Rate] {
        members(value).compactMap { v in
            switch typeName(v) {
            case "GstFraction":
                CaptureMode.Rate(Int(gst_value_get_fraction_numerator(v)), Int(gst_value_get_fraction_denominator(v)))
            case "GstFractionRange":
                gst_value_get_fraction_range_max(v).map {
                    CaptureMode.Rate(Int(gst_value_get_fraction_numerator($0)), Int(gst_value_get_fraction_denominator($0)))
                }
            default: nil
            }
        }
    }
}
