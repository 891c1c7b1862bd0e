import PoseCastKit

/// Turns an `annotate` request into the world position the publisher stores: the
/// expert's own position (`world`), the publisher's depth of the tapped frame
/// (`publisherDepth`), or the naive unprojection with the newest pose (`screen`).
public struct AnnotationPlacer: Sendable {
    public let history: FrameHistory
    /// Planes the `screen` placement intersects (the ground by default).
    public let planes: [Plane]

    public init(history: FrameHistory, planes: [Plane] = [.ground]) {
        self.history = history; self.planes = planes
    }

    public func place(_ request: AnnotationRequest) throws(ControlError) -> Vector3 { try placement(of: request).position }

    /// The position and how it was found (`auto` resolved to `publisherDepth` or `world`).
    public func placement(of request: AnnotationRequest) throws(ControlError) -> (position: Vector3, placement: AnnotationPlacement) {
        guard request.placement == .auto else { return (try position(request, by: request.placement), request.placement) }
        // The depth where this source has one for that frame; the expert's point otherwise.
        if history.entry(request.frameId)?.depth != nil { return (try position(request, by: .publisherDepth), .publisherDepth) }
        guard request.position != nil else {
            throw ControlError(id: nil, code: .invalidValue, message: "the tap (\(request.tap.x), \(request.tap.y)) hits no surface: this publisher has no depth for frame \(request.frameId) and the tap's ray meets none of the expert's placement planes (sky?)")
        }
        return (try position(request, by: .world), .world)
    }

    /// The position of `request` placed `by` one way (never `auto`).
    private func position(_ request: AnnotationRequest, by placement: AnnotationPlacement) throws(ControlError) -> Vector3 {
        func fail(_ code: ControlErrorCode, _ message: String) -> ControlError { ControlError(id: nil, code: code, message: message) }
        switch placement {
        case .auto:
            preconditionFailure("auto is resolved by placement(of:)")
        case .world:
            guard let p = request.position else { throw fail(.missingField, "missing field \"position\"") }
            return p
        case .publisherDepth:
            guard let entry = history.entry(request.frameId), let pose = entry.pose else {
                throw fail(.notFound, "frame \(request.frameId) is not among the last \(history.capacity) frames this publisher keeps")
            }
            guard let depth = entry.depth else {
                throw fail(.unsupported, "this publisher's source supplies no depth; send placement \"world\" with a position")
            }
            guard let d = depth.depth(at: request.tap) else {
                throw fail(.invalidValue, "the tap (\(request.tap.x), \(request.tap.y)) hits no surface on frame \(request.frameId): nothing there has a known depth (sky?)")
            }
            do throws(PlacementError) { return try PlacementMode.publisherDepth.place(request.tap, on: pose, depth: d) } catch {
                throw fail(.invalidValue, error.description)
            }
        case .screen:
            guard let pose = history.newestPose else { throw fail(.unsupported, "the publisher has sent no frame with a pose yet") }
            do throws(PlacementError) { return try PlacementMode.planes(planes).place(request.tap, on: pose) } catch {
                throw fail(.invalidValue, error.description)
            }
        }
    }
}
