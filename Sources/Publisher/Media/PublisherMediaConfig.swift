import Imaging
import PoseMedia
import RTCSession
import Voice
import TagTracking

/// What a `PublisherMedia` is built with: the source, the size and rate, the codec and
/// its bounds, congestion control's, the voice, and callbacks from streaming threads.
public struct PublisherMediaConfig: Sendable {
    public enum Source: Sendable, Equatable {
        /// GStreamer's videotestsrc (live), with a pattern name ("ball", "smpte", …).
        case test(pattern: String = "ball")
        /// A V4L2 camera device.
        case v4l2(device: String = "/dev/video0")
        /// The synthetic AR camera: the standard scene rendered from each frame's pose.
        case synthetic
        /// A still picture (PNG or JPEG) repeated as live video (`imagefreeze`): a person
        /// in front of the camera for the effects' demo and gallery, without a camera.
        case image(path: String)
        /// A recorded video (anything `decodebin` reads) played as a live camera, looping
        /// (`VideoFileSource`): a moving person for the effects without a camera.
        case video(path: String)
        /// Frames the application makes and pushes itself, each with its pose (`FrameFeed`);
        /// the capture size must be the feed's.
        case frames(FrameFeed)
    }
    public var source: Source = .test()
    /// The size sent (the encoder's, before any resolution step).
    public var width = 640, height = 480, fps = 30
    /// The size captured, when wider than the size sent: framing and zoom crop it
    /// (`EffectChain`). Nil: the size sent.
    public var captureWidth: Int?, captureHeight: Int?
    /// The video effects the publisher starts with.
    public var effects = EffectOptions()
    public var codec: VideoCodec = .h264
    /// With `.h264`: x264 (the default) or OpenH264.
    public var h264Encoder: H264Encoder = .x264
    /// Encoder properties set after our own (`--encoder-option`; benchmarks, tuning).
    public var encoderOptions: [EncoderOption] = []
    /// The encoder's bitrate ceiling with `adaptBitrate`, its bitrate without (kbit/s).
    public var bitrateKbps = 2000
    /// Congestion control: what each subscriber reports of what it was sent (NACKs,
    /// reception reports, round trips, REMB) drives a bandwidth estimate
    /// (`BitrateController`), and the encoder follows the lowest (`adaptBitrate(nowNanos:)`,
    /// which the caller runs a few times a second: `PublisherApp` does, and
    /// `posecast-publisher` has it on by default). Off here, so that a caller that does
    /// not run it (the loopback) gets `bitrateKbps`, not the start rate for good.
    public var adaptBitrate = false
    /// With `adaptBitrate`: ask each subscriber for transport-wide feedback (the
    /// `transport-cc` header extension in our offer; a browser keeps it, our own
    /// subscriber reports on its `feedback` channel instead), so that the path's delay
    /// and loss are measured here from the packets' departures and the receiver's arrival
    /// times, not taken from a browser's own estimate (REMB), which its CPU stalls drag
    /// down (docs/NETWORK.md).
    public var transportWideCC = true
    /// The lowest bitrate adaptation goes to (kbit/s).
    public var minimumBitrateKbps = 150
    /// Where adaptation starts (kbit/s, within the bounds): below the ceiling, so that
    /// a slow link's first keyframe is not ten times what it carries (measured at
    /// 600 kbit/s starting from 2 Mbit/s: the first picture after 5 s or never); a fast
    /// link reaches 2 Mbit/s from 800 kbit/s in about 5 s.
    public var startBitrateKbps = 800
    /// With `adaptBitrate`: how far the encoded picture may shrink when the allowed rate
    /// is too low for the camera's size (`ResolutionLadder`; 1: never, 2: half the
    /// width and height, 4: a quarter). The pose stays exact (normalised intrinsics).
    public var maxDownscale = 4
    /// Frames between periodic keyframes (300: 10 s at 30 fps). Subscribers that lose a
    /// keyframe ask for one (PLI/FIR) and a joining one gets one at once, so periodic
    /// ones are a backstop: each costs about three delta frames in one burst. Through
    /// Janus a subscriber's own requests do not reach us (docs/SCALING.md), so there the
    /// backstop is what a subscriber that missed the first keyframes waits for.
    public var keyframeInterval = 300
    /// The synthetic camera renders each frame ahead of its capture instant, with the
    /// pose of that instant (`SyntheticSource`): only for pose sources that know the
    /// future (trajectories, replays), never for a live feed.
    public var renderAhead = false
    /// The synthetic camera paints a white frame once a second (the A/V sync tests: the
    /// test voice's `bursts` start at the same instants).
    public var flashEverySecond = false
    /// Write each frame id into the picture (see `FrameStamp`), for end-to-end checks.
    public var stampFrameIDs = false
    /// Room reserved in every packet for application bytes in the pose element.
    public var maxApplicationBytes = 0
    /// Path MTU the RTP packets must fit in (extension included).
    public var pathMTU = 1200
    public var rtc = RTCConfiguration()
    /// A `clocksync` on the raw frames before the encoder (the `baseline` latency profile).
    public var clockSync = false
    /// Write sampled frames' luma as the encoder gets them, for subscribers to compare
    /// with what they decode (benchmarks: `QualitySampling`).
    public var qualitySampling: QualitySampling?
    /// Two-way voice (`PublisherVoice`); nil: no audio is offered.
    public var voice: VoiceOptions?
    /// Whether a viewer (not only an expert) may talk: the room's setting, held by its
    /// publisher (default no: viewers listen).
    public var viewersMayTalk = false
    /// The tones of `voice.detectTones` starting and stopping where the field hears them.
    public var onTone: (@Sendable (ToneChange) -> Void)?
    /// Each frame's encode timing, on the encoder's streaming thread (keep it quick).
    public var onEncoded: (@Sendable (EncodedFrameTiming) -> Void)?
    /// Each captured frame's pose read from its own pixels (`--pose apriltag`), asked
    /// instead of the pose source.
    public var framePoseSource: FramePoseSource?
    /// What each captured picture goes through, in place, before its pose is read or
    /// anything else sees it (a calibrated lens's distortion taken out,
    /// `PictureUndistortion`); nil: nothing.
    public var preparePicture: (@Sendable (I420Planes) -> Void)?
    /// AprilTags the synthetic camera paints on its scene (where nothing nearer hides
    /// them), so `--pose apriltag` is measured against the poses it renders from.
    public var sceneTags: TagMap?
    public init() {}
}
