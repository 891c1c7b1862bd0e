package import CGStreamer
import CGstShim
import PoseCastKit
import RTCSession
import Synchronization

/// The media path with the network cut out: test source → pose attach → encoder →
/// payloader (+ pose extension) → depayloader → decoder → pose read, in one
/// pipeline, as fast as it runs. For component tests and codec timing.
package final class OfflineCodecChain: Sendable {
    package let rejections = PoseRejectionCounter()
    private let pipeline: Pipeline
    private let poseExtension: PoseExtension

    /// - Parameter corruptEveryNth: when set, every n-th frame's pose element gets an
    ///   unsupported version byte after tagging (to prove rejection is counted, not fatal).
    package init(codec: VideoCodec, frames: Int, width: Int = 640, height: Int = 480,
                 poseSource: @escaping PoseSource, onAttached: (@Sendable (FramePose) -> Void)?,
                 onFrame: (@Sendable (DecodedFrame) -> Void)?, corruptEveryNth: Int? = nil,
                 h264Encoder: H264Encoder = .x264) throws(RTCError) {
        try PoseHeaderExtension.register()
        pipeline = try Pipeline(name: "offline-\(codec.rawValue)")
        let source = try ElementFactory.make("videotestsrc")
        source.set("num-buffers", frames)
        source.set("pattern", "smpte")
        let caps = try ElementFactory.make("capsfilter")
        caps.set("caps", "video/x-raw,format=I420,width=\(width),height=\(height),framerate=30/1")
        let encoder = try codec.makeEncoder(bitrateKbps: 2000, keyframeInterval: 30, h264Encoder: h264Encoder)
        let payloader = try codec.makePayloader(mtu: 1136)
        poseExtension = try PoseHeaderExtension.make(id: PoseHeaderExtension.defaultID)
        poseExtension.add(to: payloader)
        let decodeChain = try codec.makeDecodeChain()
        let sink = try ElementFactory.make("fakesink")
        sink.set("sync", false)
        let chain = [source, caps, encoder, payloader] + decodeChain + [sink]
        for e in chain { pipeline.add(e) }
        try pipeline.link(chain)

        let attached: (@Sendable (UnsafeMutablePointer<GstBuffer>, FramePose) -> Void)? = onAttached.map { report in
            { @Sendable _, pose in report(pose) }
        }
        PoseTagger(width: width, height: height, stampFrameIDs: true, poseSource: poseSource, onAttached: attached)
            .install(on: caps.staticPad("src")!)
        if let n = corruptEveryNth {
            let count = Mutex(0)
            encoder.staticPad("sink")!.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { info in
                let index = count.withLock { c in defer { c += 1 }; return c }
                if index % n == 0, let buffer = ProbeInfo.writableBuffer(info),
                   var bytes = PoseMeta.bytes(of: buffer), !bytes.isEmpty {
                    bytes[0] = PoseWireFormat.version &+ 1
                    _ = PoseMeta.attach(bytes, to: buffer)
                }
                return GST_PAD_PROBE_OK
            }
        }
        PoseReader(codec: codec, readStamps: true, rejections: rejections, onFrame: onFrame)
            .install(on: decodeChain.last!.staticPad("src")!)
    }

    /// Plays to end of stream; throws the first pipeline error.
    package func run() async throws(RTCError) {
        let outcome: Result<Void, RTCError> = await withCheckedContinuation { continuation in
            let once = Mutex<CheckedContinuation<Result<Void, RTCError>, Never>?>(continuation)
            let finish: @Sendable (Result<Void, RTCError>) -> Void = { r in once.withLock { c in c?.resume(returning: r); c = nil } }
            pipeline.addObserver { message in
                switch message {
                case .endOfStream: finish(.success(()))
                case let .error(source, text, debug): finish(.failure(.pipeline(source: source, message: text, debug: debug)))
                default: break
                }
            }
            do throws(RTCError) { try pipeline.play() } catch { finish(.failure(error)) }
        }
        pipeline.stop()
        try outcome.get()
    }
}
