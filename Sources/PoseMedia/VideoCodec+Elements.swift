import RTCSession

/// Building and driving the codec's GStreamer elements: encoder, payloader, decode chain.
extension VideoCodec {
    /// Changes a running encoder's target bitrate (every encoder takes it between frames).
    package func setBitrate(_ kbps: Int, on encoder: Element) {
        let target = encoderElement(of: encoder)
        switch self {
        case .vp8: target.set("target-bitrate", kbps * 1000)
        case .h264: target.set("bitrate", target.name == "x264" ? kbps : kbps * 1000)   // x264enc counts in kbit/s
        }
    }

    /// Encoder configured for real-time, low-latency streaming.
    /// `level`: with x264, the H.264 `level_idc` it is held to (the one the offer declares).
    package func makeEncoder(bitrateKbps: Int, keyframeInterval: Int, h264Encoder: H264Encoder = .x264,
                             level: Int? = nil) throws(RTCError) -> Element {
        if self == .h264, h264Encoder == .x264 {
            return try Self.makeX264(bitrateKbps: bitrateKbps, keyframeInterval: keyframeInterval, level: level)
        }
        switch self {
        case .vp8:
            let e = try ElementFactory.make("vp8enc")
            e.set("deadline", 1)                 // realtime
            e.set("cpu-used", 8)
            e.set("end-usage", "cbr")
            e.set("target-bitrate", bitrateKbps * 1000)
            // A half-second rate-control buffer (libvpx's default is 6 s, libwebrtc's 1 s):
            // what a simple scene left unspent is credit the encoder spends later over its
            // target, and after congestion control cut the target, a second's credit kept
            // a 600 kbit/s link's buffer filling for most of a second more.
            e.set("buffer-size", 500)
            e.set("buffer-initial-size", 300)
            e.set("buffer-optimal-size", 400)
            // The rate as a ceiling (libwebrtc's VP8 settings): at most 15 % over the
            // target, and a frame skipped when the buffer runs under 30 % rather than sent
            // over the link's rate. Without them, after congestion control cut the target,
            // the encoder went on at the old rate for a second (measured 720 kbit/s asked
            // 550) and filled a 600 kbit/s link's buffer until it dropped packets.
            e.set("overshoot", 15)
            e.set("dropframe-threshold", 30)
            e.set("keyframe-max-dist", keyframeInterval)
            // A keyframe at most three average frames: one of ten (its default size here)
            // is a burst a link near its capacity drops the tail of.
            e.set("max-intra-bitrate", 300)
            e.set("lag-in-frames", 0)
            e.set("error-resilient", "default")
            // One thread: libvpx's worker threads busy-wait on each other, which turns into
            // a stall when the cores are shared (tests in parallel, many subscribers).
            e.set("threads", 1)
            return e
        case .h264:
            let e = try ElementFactory.make("openh264enc")
            e.set("bitrate", bitrateKbps * 1000)
            e.set("gop-size", keyframeInterval)
            e.set("complexity", "low")
            e.set("rate-control", "bitrate")
            e.set("usage-type", "camera")
            return e
        }
    }

    /// Payloader; `mtu` leaves room for the header extension, which 1.22 does not count.
    package func makePayloader(mtu: Int) throws(RTCError) -> Element {
        let p = try ElementFactory.make(self == .vp8 ? "rtpvp8pay" : "rtph264pay")
        p.set("pt", payloadType)
        p.set("mtu", mtu)
        if self == .h264 {
            p.set("config-interval", -1)          // SPS/PPS with every IDR
            p.set("aggregate-mode", "zero-latency")
        }
        return p
    }

    /// Depayloader → (parser) → decoder, in link order. After a packet that NACK could
    /// not bring back, the depayloader asks for a keyframe (PLI upstream) and drops the
    /// frames until it comes, so a damaged or wrongly referenced picture never reaches
    /// the decoder, never showing beside a pose that is not its own.
    package func makeDecodeChain() throws(RTCError) -> [Element] {
        switch self {
        case .vp8:
            let depay = try ElementFactory.make("rtpvp8depay")
            depay.set("request-keyframe", true)
            depay.set("wait-for-keyframe", true)
            return [depay, try ElementFactory.make("vp8dec")]
        case .h264:
            let depay = try ElementFactory.make("rtph264depay")
            depay.set("request-keyframe", true)
            depay.set("wait-for-keyframe", true)     // with access units (what openh264dec takes)
            return [depay, try ElementFactory.make("h264parse"), try ElementFactory.make("openh264dec")]
        }
    }
}
