import PoseCastKit
import Synchronization
import PoseMedia

/// How far an annotation landed from where it should have: the true world point of a
/// tap (known when the expert tapped a known scene point, as benchmarks and tests do)
/// against the position the publisher stored, in centimetres and in pixels once both
/// are projected into a later frame.
public struct PlacementReport: Sendable, Hashable {
    public var annotationId: String
    public var placement: AnnotationPlacement
    public var truth: Vector3
    public var placed: Vector3
    public var errorCentimetres: Float
    /// Pixel distance between the projections of `truth` and `placed` in frame
    /// `laterFrameId`; nil when either is behind that frame's camera.
    public var errorPixels: Float?
    public var tapFrameId: UInt32
    public var laterFrameId: UInt32
}

/// Remembers the true point behind each tap the subscriber sent and reports the
/// placement error when the publisher's annotation list comes back.
final class PlacementTracker: Sendable {
    private struct Pending: Sendable { var truth: Vector3; var placement: AnnotationPlacement; var frameId: UInt32 }
    private struct State {
        var byRequest: [String: Pending] = [:]
        var byAnnotation: [String: Pending] = [:]
    }
    private let state = Mutex(State())

    init() {}

    func expect(request id: String, truth: Vector3, placement: AnnotationPlacement, frameId: UInt32) {
        state.withLock { $0.byRequest[id] = Pending(truth: truth, placement: placement, frameId: frameId) }
    }

    /// The publisher acknowledged a request with the annotation's id (or refused it: nil).
    func acknowledged(request id: String, annotationId: String?) {
        state.withLock { s in
            guard let pending = s.byRequest.removeValue(forKey: id), let annotationId else { return }
            s.byAnnotation[annotationId] = pending
        }
    }

    /// Reports (once each) the annotations of the list whose truth is known, measured
    /// in `later`, the frame on screen now, of `width` × `height` pixels.
    func evaluate(_ list: [Annotation], later: FramePose?, width: Int, height: Int) -> [PlacementReport] {
        let due = state.withLock { s -> [(Annotation, Pending)] in
            list.compactMap { a in s.byAnnotation.removeValue(forKey: a.id).map { (a, $0) } }
        }
        let camera = later.flatMap(CameraModel.init(pose:))
        return due.map { annotation, pending in
            var pixels: Float?
            if let camera, let t = camera.project(pending.truth), let p = camera.project(annotation.position) {
                let dx = (t.point.x - p.point.x) * Float(width), dy = (t.point.y - p.point.y) * Float(height)
                pixels = (dx * dx + dy * dy).squareRoot()
            }
            // How the publisher placed it (what `auto` became), else what was asked.
            let placement = annotation.placement == .world && pending.placement != .auto ? pending.placement : annotation.placement
            return PlacementReport(annotationId: annotation.id, placement: placement, truth: pending.truth,
                                   placed: annotation.position,
                                   errorCentimetres: pending.truth.distance(to: annotation.position) * 100,
                                   errorPixels: pixels, tapFrameId: pending.frameId, laterFrameId: later?.frameID ?? 0)
        }
    }
}
