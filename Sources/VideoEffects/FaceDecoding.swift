import Foundation
import PoseCastKit

/// One face found in a picture: its box and six landmarks (eyes, nose tip, mouth, ear
/// tragions), normalised in the picture the detector was given.
public struct DetectedFace: Sendable, Hashable {
    public var box: NormalizedRect
    public var score: Float
    public var keypoints: [NormalizedPoint]
    public init(box: NormalizedRect, score: Float, keypoints: [NormalizedPoint]) {
        self.box = box; self.score = score; self.keypoints = keypoints
    }
}

/// The output side of MediaPipe's short-range face detector (a single-shot detector over
/// a 128×128 input): its anchor grid, the decoding of its 896 regressions into boxes and
/// landmarks, and the weighted non-maximum suppression that merges overlapping ones.
/// Written from the model's published configuration (strides 8, 16, 16, 16; one fixed-size
/// anchor pair per layer; offsets in input pixels), not from MediaPipe's code.
public enum FaceDecoding {
    public static let inputSize = 128
    /// Values per anchor: box centre x, y, width, height, then six (x, y) landmarks.
    public static let valuesPerAnchor = 16

    /// Anchor centres, normalised, in the order the model emits them: per stride group,
    /// row by row, column by column, then the group's anchors per cell. Layers that share
    /// a stride share a grid, so stride 8 gives 2 anchors per cell (16×16) and the three
    /// stride-16 layers 6 per cell (8×8): 512 + 384 = 896.
    public static let anchors: [NormalizedPoint] = {
        var out: [NormalizedPoint] = []
        for (stride, perCell) in [(8, 2), (16, 6)] {
            let cells = inputSize / stride
            for row in 0..<cells {
                for col in 0..<cells {
                    let p = NormalizedPoint(x: (Float(col) + 0.5) / Float(cells), y: (Float(row) + 0.5) / Float(cells))
                    for _ in 0..<perCell { out.append(p) }
                }
            }
        }
        return out
    }()

    /// Faces scoring at least `minScore` (after the logistic function), merged where
    /// they overlap by more than `mergeOverlap` (intersection over union), best first.
    /// `regressors` holds `anchors.count × 16` values, `scores` `anchors.count` logits.
    public static func decode(regressors: UnsafePointer<Float>, scores: UnsafePointer<Float>,
                              minScore: Float = 0.5, mergeOverlap: Float = 0.3) -> [DetectedFace] {
        var candidates: [DetectedFace] = []
        let scale = Float(inputSize)
        for (i, anchor) in anchors.enumerated() {
            let logit = min(max(scores[i], -100), 100)
            let score = 1 / (1 + exp(-logit))
            guard score >= minScore else { continue }
            let r = regressors + i * valuesPerAnchor
            let cx = r[0] / scale + anchor.x, cy = r[1] / scale + anchor.y
            let w = r[2] / scale, h = r[3] / scale
            guard w > 0, h > 0, cx.isFinite, cy.isFinite else { continue }
            let keypoints = (0..<6).map { k in NormalizedPoint(x: r[4 + 2 * k] / scale + anchor.x, y: r[5 + 2 * k] / scale + anchor.y) }
            candidates.append(DetectedFace(box: NormalizedRect(x: cx - w / 2, y: cy - h / 2, width: w, height: h),
                                           score: score, keypoints: keypoints))
        }
        return weightedSuppression(candidates, overlap: mergeOverlap)
    }

    /// Weighted non-maximum suppression: the best remaining candidate and every other
    /// that overlaps it by more than `overlap` become one face, their boxes and landmarks
    /// averaged by score (steadier than keeping the single best, frame after frame).
    public static func weightedSuppression(_ faces: [DetectedFace], overlap: Float) -> [DetectedFace] {
        var remaining = faces.sorted { $0.score > $1.score }
        var out: [DetectedFace] = []
        while let best = remaining.first {
            var group: [DetectedFace] = [], rest: [DetectedFace] = []
            for f in remaining {
                if iou(best.box, f.box) > overlap { group.append(f) } else { rest.append(f) }
            }
            remaining = rest
            let total = group.reduce(Float(0)) { $0 + $1.score }
            func mean(_ value: (DetectedFace) -> Float) -> Float { group.reduce(0) { $0 + value($1) * $1.score } / total }
            let box = NormalizedRect(x: mean { $0.box.x }, y: mean { $0.box.y }, width: mean { $0.box.width }, height: mean { $0.box.height })
            let keypoints = best.keypoints.indices.map { k in NormalizedPoint(x: mean { $0.keypoints[k].x }, y: mean { $0.keypoints[k].y }) }
            out.append(DetectedFace(box: box, score: best.score, keypoints: keypoints))
        }
        return out
    }

    /// Intersection over union of two boxes.
    public static func iou(_ a: NormalizedRect, _ b: NormalizedRect) -> Float {
        let w = min(a.x + a.width, b.x + b.width) - max(a.x, b.x)
        let h = min(a.y + a.height, b.y + b.height) - max(a.y, b.y)
        guard w > 0, h > 0 else { return 0 }
        let inter = w * h
        return inter / (a.width * a.height + b.width * b.height - inter)
    }
}
