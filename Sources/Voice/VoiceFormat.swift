/// The one raw format every voice chain works in: 48 kHz mono signed 16-bit, the rate
/// Opus runs at and one `webrtcdsp` takes (10 ms frames of 480 samples).
public enum VoiceFormat {
    public static let rate = 48_000
    /// Caps text for a capsfilter.
    public static let caps = "audio/x-raw,format=S16LE,rate=48000,channels=1,layout=interleaved"
    /// The Opus RTP caps a transceiver prefers (codec preferences; payload type 111, the
    /// browsers' usual one). Opus is always declared stereo in SDP (RFC 7587); we send mono.
    public static let rtpCaps = "application/x-rtp,media=audio,encoding-name=OPUS,clock-rate=48000,payload=111,encoding-params=(string)2,minptime=(string)10,useinbandfec=(string)1"
    public static let payloadType = 111
}
