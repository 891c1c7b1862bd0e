import RTCModel
import PoseCastKit

/// One decoded frame and what it carried.
public struct DecodedFrame: Sendable {
    /// The pose, if the frame had a valid one.
    public var pose: FramePose?
    /// Why the frame's pose element was rejected (the frame still played).
    public var poseError: PoseWireError?
    /// The id painted into the picture (only with `readFrameStamps`).
    public var stampedFrameID: UInt32?
    /// Host wall-clock time when the decoder output the frame.
    public var decodedAtNanos: UInt64
    public var codec: VideoCodec
    /// Picture size in pixels (0 until the decoder's caps are known).
    public var width = 0, height = 0

    public init(pose: FramePose? = nil, poseError: PoseWireError? = nil, stampedFrameID: UInt32? = nil,
                decodedAtNanos: UInt64, codec: VideoCodec, width: Int = 0, height: Int = 0) {
        self.pose = pose; self.poseError = poseError; self.stampedFrameID = stampedFrameID
        self.decodedAtNanos = decodedAtNanos; self.codec = codec; self.width = width; self.height = height
    }
}

/// A decoded I420 picture, copied out of the pipeline, with its frame.
public struct DecodedPicture: Sendable {
    public var frame: DecodedFrame
    public var width: Int, height: Int
    /// Tightly packed planes: Y is width × height, U and V (width/2) × (height/2).
    public var y: [UInt8], u: [UInt8], v: [UInt8]

    public init(frame: DecodedFrame, width: Int, height: Int, y: [UInt8], u: [UInt8], v: [UInt8]) {
        self.frame = frame; self.width = width; self.height = height; self.y = y; self.u = u; self.v = v
    }

    /// Luma and chroma at a pixel.
    public func yuv(x: Int, y py: Int) -> (y: UInt8, u: UInt8, v: UInt8) {
        let c = (py / 2) * (width / 2) + x / 2
        return (y[py * width + x], u[c], v[c])
    }
}
