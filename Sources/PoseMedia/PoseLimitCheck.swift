import CGstShim
import PoseCastKit

/// The pose size limit is written twice, once in C (PCG_POSE_MAX_BYTES, which the
/// extension's write and read check) and once in Swift (`PoseWireFormat.maxElementSize`,
/// which the encoder checks). This function only compiles while they are the same
/// number: the C array `PcgPoseBytes.bytes` is imported as a tuple of PCG_POSE_MAX_BYTES
/// elements, and it must be exactly Swift's `ElementStorage`, whose size is the Swift
/// limit. Change one without the other and the build fails here.
@inline(never)
func poseLimitIsTheSameInCAndSwift(_ c: PcgPoseBytes) -> PoseWireFormat.ElementStorage { c.bytes }
