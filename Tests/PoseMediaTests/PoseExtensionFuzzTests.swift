import CGStreamer
import CGstShim
import PoseCastKit
import PoseMedia
import TestSupport
import Testing

/// The receive path of the pose, fuzzed: extension element bytes go through the real
/// extension object's `read` (what the depayloader calls for each frame, via
/// `gst_rtp_header_extension_read`) into a buffer's pose meta, then the bytes stored
/// there through `PoseWireFormat.decode` (what PoseReader does on decoded frames).
@Suite("pose extension fuzz")
struct PoseExtensionFuzzTests {
    @Test("the extension's URI is the same in the C shim and in the wire format the session logic reads answers with")
    func uriAgrees() {
        #expect(PoseHeaderExtension.uri == PoseWireFormat.headerExtensionURI)
    }

    /// Real poses as the publisher encodes them: plain, flagged, with and without
    /// application bytes up to the maximum.
    static func seeds() throws -> [[UInt8]] {
        let generator = PoseGenerator()
        var seeds = try (UInt32(1)...24).map { id in try PoseWireFormat.encode(generator.pose(frameID: id, captureTimeNanos: UInt64(id) * 33_333_333)) }
        var missing = generator.pose(frameID: 99, captureTimeNanos: 1)
        missing.flags = [.missing, .late]
        missing.applicationData = [UInt8](repeating: 0xAB, count: PoseWireFormat.maxApplicationBytes)
        seeds.append(try PoseWireFormat.encode(missing))
        return seeds
    }

    enum Outcome: Equatable {
        /// Stored by the extension and decoded into a valid pose.
        case accepted
        /// Refused by the extension's read (nothing stored).
        case refusedByExtension
        /// Stored, then rejected by the decoder with this reason.
        case rejected(String)
    }

    /// One element through the real extension into a fresh buffer, then the decoder.
    /// Records a violation when the two layers disagree with the rules.
    /// (The depayloader always hands `read` a writable buffer; GStreamer itself asserts that.)
    static func run(_ bytes: [UInt8], ext: UnsafeMutablePointer<GstRTPHeaderExtension>) -> Result<Outcome, FuzzViolation> {
        let buffer = gst_buffer_new()!
        defer { gst_buffer_unref(buffer) }
        let read = bytes.withUnsafeBufferPointer { p in
            gst_rtp_header_extension_read(ext, GST_RTP_HEADER_EXTENSION_TWO_BYTE, p.baseAddress, gsize(p.count), buffer) != 0
        }
        var stored = [UInt8](repeating: 0, count: Int(PCG_POSE_MAX_BYTES) + 16)
        let n = stored.withUnsafeMutableBufferPointer { pcg_buffer_get_pose(buffer, $0.baseAddress, gsize($0.count)) }
        guard read else {
            guard n < 0 else { return .failure(FuzzViolation("read refused but stored \(n) bytes")) }
            guard bytes.count > Int(PCG_POSE_MAX_BYTES) else {
                return .failure(FuzzViolation("read refused a \(bytes.count)-byte element"))
            }
            return .success(.refusedByExtension)
        }
        guard bytes.count <= Int(PCG_POSE_MAX_BYTES) else {
            return .failure(FuzzViolation("read accepted \(bytes.count) bytes"))
        }
        guard n == bytes.count, Array(stored.prefix(Int(n))) == bytes else {
            return .failure(FuzzViolation("stored \(n) bytes that differ from the \(bytes.count) read"))
        }
        do throws(PoseWireError) {
            let pose = try PoseWireFormat.decode(stored.prefix(Int(n)))
            // Accepted only if it is a pose the publisher could have sent, bit for bit.
            guard let again = try? PoseWireFormat.encode(pose), again == bytes else {
                return .failure(FuzzViolation("decoded a pose that does not re-encode to the same bytes"))
            }
            guard pose.orientation.norm.isFinite, pose.intrinsics.fx > 0, pose.intrinsics.fy > 0,
                  pose.applicationData.count <= PoseWireFormat.maxApplicationBytes else {
                return .failure(FuzzViolation("decoded an invalid pose \(pose)"))
            }
            return .success(.accepted)
        } catch {
            return .success(.rejected(error.reason))
        }
    }

    @Test("every element is stored and decoded to a valid pose, or refused with a reason; a valid pose still decodes after")
    func fuzzExtensionAndDecoder() throws {
        try PoseHeaderExtension.register()
        let count = FuzzRun.caseCount(), seed = FuzzRun.seed
        let poseExtension = try PoseHeaderExtension.make(id: 1)
        let ext = poseExtension.raw
        defer { withExtendedLifetime(poseExtension) {} }
        let seeds = try Self.seeds()
        // Elements in the wild are at most 255 bytes (two-byte form); the extension
        // is also given longer ones, as a broken caller might.
        let mutator = ByteMutator(seeds: seeds, maxLength: 300)
        var tally = FuzzTally(harness: "pose", seed: seed)
        var extRefused = 0
        for index in FuzzRun.indices(count: count) {
            var rng = SplitMix64(seed: FuzzRun.caseSeed(seed, index))
            let seedCase = rng.chance(0.02)
            let bytes = seedCase ? rng.pick(seeds) : mutator.make(&rng)
            let kind = seedCase ? "seed" : "mutated"
            switch Self.run(bytes, ext: ext) {
            case .success(let outcome) where seedCase && outcome != .accepted:
                tally.fail(case: index, "a pose the publisher sent was refused: \(outcome)", input: "\(bytes)")
            case .success(.accepted): tally.accept(kind: kind)
            case .success(.refusedByExtension): extRefused += 1; tally.reject("refusedByExtension", kind: kind)
            case .success(.rejected(let reason)): tally.reject(reason, kind: kind)
            case .failure(let violation): tally.fail(case: index, violation.description, input: bytes.map { String($0, radix: 16) }.joined(separator: " "))
            }
        }
        print(tally.resultLine())
        #expect(tally.failed == 0, "\(tally.failures.joined(separator: "\n"))")
        #expect(tally.cases == FuzzRun.indices(count: count).count)
        if count >= 1000 { #expect(tally.accepted > 0 && tally.rejected > 0, "the mutator reaches both outcomes") }
        let (_, read, refused) = poseExtension.counters
        #expect(refused == UInt64(extRefused) && read == UInt64(tally.cases - extRefused), "the extension counts what it reads and refuses")

        // A valid pose still goes through the same extension object.
        let pose = PoseGenerator().pose(frameID: 12345, captureTimeNanos: 42)
        let bytes = try PoseWireFormat.encode(pose)
        #expect(try Self.run(bytes, ext: ext).get() == .accepted)
        #expect(try PoseWireFormat.decode(bytes).isBitwiseIdentical(to: pose))
    }
}
