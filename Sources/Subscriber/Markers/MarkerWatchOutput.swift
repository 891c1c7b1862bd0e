import Foundation
import NodeOutput
import PoseMedia

/// The marker checks as subscriber output: event name, JSON fields (docs/SUBSCRIBER.md)
/// and the line a person reads.
extension MarkerWatchEvent {
    public var name: NodeEventName {
        switch self {
        case .visible: .annotationVisible
        case .report: .markerReport
        case .checkDone: .markerCheckDone
        }
    }

    public var fields: [String: Any] {
        func rounded(_ v: Float) -> Double { (Double(v) * 100).rounded() / 100 }
        switch self {
        case .visible(let v):
            return ["annotationId": v.annotationId, "requestId": v.requestId,
                    "round_trip_ms": (v.roundTripMs * 10).rounded() / 10, "frameId": v.frameId,
                    "error_px": rounded(v.errorPixels)]
        case .report(let r):
            var fields: [String: Any] = [
                "annotationId": r.annotationId, "color": r.color, "removed": r.removed, "frames": r.frames,
                "visible": r.visible, "found": r.found,
                "error_px_p50": r.errorP50.map(rounded) ?? NSNull(), "error_px_max": r.errorMax.map(rounded) ?? NSNull(),
            ]
            if r.removed { fields["absent"] = r.absent ?? NSNull() }
            return fields
        case let .checkDone(frames, reports):
            return ["frames": frames, "reports": reports]
        }
    }

    public var human: String {
        switch self {
        case .visible(let v):
            return String(format: "annotation %@ (request %@) visible %.1f ms after the request, in frame %u, %.2f px from its anchor",
                          v.annotationId, v.requestId, v.roundTripMs, v.frameId, v.errorPixels)
        case .report(let r):
            let errors = r.errorP50.map { p50 in String(format: ", error p50 %.2f px, max %.2f px", p50, r.errorMax ?? p50) } ?? ""
            if r.removed {
                let verdict = r.absent.map { $0 ? "gone" : "STILL DRAWN" } ?? "never in view, not checked"
                return "markers: removed \(r.annotationId) over \(r.frames) frames: in view \(r.visible), mark found \(r.found): \(verdict)"
            }
            return "markers: \(r.annotationId) over \(r.frames) frames: in view \(r.visible), found \(r.found)" + errors
        case let .checkDone(frames, reports):
            return "markers: check of \(frames) frames done (\(reports) annotation\(reports == 1 ? "" : "s"))"
        }
    }
}
