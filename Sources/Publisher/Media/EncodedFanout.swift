import PoseCastKit
import PoseMedia
import RTCSession

/// The encoder's one output, packetised once per way a subscriber takes the pose, each
/// into a tee its branches hang from (one encode for all):
/// - payloader with the pose header extension → `tee` (GStreamer peers);
/// - pose trailer → payloader → `trailerTee` (browsers, `PoseTransport.trailer`);
/// - H.264 only: pose SEI → payloader → `sei.tee` (through an SFU, `PoseTransport.sei`).
struct EncodedFanout {
    /// Where the encoder's output goes in (linked by the caller after the encoder).
    let encodedTee: Element
    let tee: Element
    let payloaderSource: Pad
    let poseExtension: PoseExtension
    let trailerTee: Element
    let trailerPayloaderSource: Pad
    let sei: (tee: Element, source: Pad)?

    /// Builds the fan-out into `pipeline` (added and linked from `encodedTee` on), with
    /// the writers installed on the trailer's and the SEI's payloader inputs.
    static func build(config: PublisherMediaConfig, into pipeline: Pipeline, trailerWriter: PoseTrailerWriter,
                      seiWriter: PoseSEIWriter) throws(RTCError) -> EncodedFanout {
        // The header extension is outside the payload: leave it room under the MTU (1.22
        // does not count it).
        let overhead = 4 + 2 + PoseWireFormat.fixedSize + config.maxApplicationBytes
        let payloader = try config.codec.makePayloader(mtu: config.pathMTU - ((overhead + 3) / 4 * 4))
        let poseExtension = try PoseHeaderExtension.make(id: PoseHeaderExtension.defaultID)
        poseExtension.add(to: payloader)
        let tee = try fanOutTee("fanout")
        // The trailer and the SEI are in the payload: the full MTU.
        let trailerPayloader = try config.codec.makePayloader(mtu: config.pathMTU)
        let trailerTee = try fanOutTee("trailerfanout")
        let encodedTee = try ElementFactory.make("tee", name: "encodedfanout")
        for e in [encodedTee, payloader, tee, trailerPayloader, trailerTee] { pipeline.add(e) }
        try pipeline.link([encodedTee, payloader, tee])
        try pipeline.link([encodedTee, trailerPayloader, trailerTee])
        trailerWriter.install(on: trailerPayloader.staticPad("sink")!)
        var sei: (tee: Element, source: Pad)?
        if config.codec == .h264 {
            let seiPayloader = try config.codec.makePayloader(mtu: config.pathMTU)
            let seiTee = try fanOutTee("seifanout")
            for e in [seiPayloader, seiTee] { pipeline.add(e) }
            try pipeline.link([encodedTee, seiPayloader, seiTee])
            seiWriter.install(on: seiPayloader.staticPad("sink")!)
            sei = (seiTee, seiPayloader.staticPad("src")!)
        }
        return EncodedFanout(encodedTee: encodedTee, tee: tee, payloaderSource: payloader.staticPad("src")!,
                             poseExtension: poseExtension, trailerTee: trailerTee,
                             trailerPayloaderSource: trailerPayloader.staticPad("src")!, sei: sei)
    }

    /// The payloader output and tee a branch taking the pose by `transport` hangs from;
    /// nil for the SEI when the codec is not H.264.
    func output(for transport: PoseTransport) -> (source: Pad, tee: Element)? {
        switch transport {
        case .headerExtension: (payloaderSource, tee)
        case .trailer: (trailerPayloaderSource, trailerTee)
        case .sei: sei.map { ($0.source, $0.tee) }
        }
    }

    /// A tee that goes on with no branch linked (before the first subscriber).
    private static func fanOutTee(_ name: String) throws(RTCError) -> Element {
        let tee = try ElementFactory.make("tee", name: name)
        tee.set("allow-not-linked", true)
        return tee
    }
}
