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

/// The output side of MediaPipe's single-shot detectors (BlazeFace-style): each layout's
/// anchor grid, the decoding of its regressions into boxes and keypoints, and the weighted
/// non-maximum suppression that merges overlapping ones. Written from the models'
/// published configurations (input size, strides, anchors per cell, offsets in input
/// pixels), not from MediaPipe's code.
public enum FaceDecoding {
    /// One detector's output layout.
    public struct Layout: Sendable {
        /// The square input's side, in pixels (the regressions are in its pixels).
        public let inputSize: Int
        /// Per stride, the anchors of each cell (layers that share a stride share a grid).
        public let strides: [(stride: Int, perCell: Int)]
        /// Keypoints after the box (x, y each).
        public let keypoints: Int
        /// Anchor centres, normalised, in the order the model emits them: per stride group,
        /// row by row, column by column, then the group's anchors per cell.
        public let anchors: [NormalizedPoint]
        public var valuesPerAnchor: Int { 4 + 2 * keypoints }

        init(inputSize: Int, strides: [(stride: Int, perCell: Int)], keypoints: Int) {
            self.inputSize = inputSize; self.strides = strides; self.keypoints = keypoints
            var out: [NormalizedPoint] = []
            for (stride, perCell) in strides {
                let cells = inputSize / stride
                for row in 0..<cells {
                    for col in 0..<cells {
                        let p = NormalizedPoint(x: (Float(col) + 0.5) / Float(cells), y: (Float(row) + 0.5) / Float(cells))
                        for _ in 0..<perCell { out.append(p) }
                    }
                }
            }
            anchors = out
        }

        /// The short-range face detector (faces within about 2 m): 128×128, strides 8 (2
        /// anchors a cell, 16×16) and 16 (6, 8×8): 896 anchors; six landmarks (eyes, nose
        /// tip, mouth, ear tragions).
        public static let shortRangeFace = Layout(inputSize: 128, strides: [(8, 2), (16, 6)], keypoints: 6)
        /// The full-range face detector (faces up to about 5 m, three-quarter and profile
        /// views): 192×192, one anchor per cell of a 48×48 grid (stride 4): 2304; the same
        /// six landmarks.
        public static let fullRangeFace = Layout(inputSize: 192, strides: [(4, 1)], keypoints: 6)
    }

    /// Detections scoring at least `minScore` (after the logistic function), merged where
    /// they overlap by more than `mergeOverlap` (intersection over union), best first.
    /// `regressors` holds `anchors.count × valuesPerAnchor` values, `scores`
    /// `anchors.count` logits.
    public static func decode(regressors: UnsafePointer<Float>, scores: UnsafePointer<Float>, layout: Layout = .shortRangeFace,
                              minScore: Float = 0.5, mergeOverlap: Float = 0.3) -> [DetectedFace] {
        var candidates: [DetectedFace] = []
        let scale = Float(layout.inputSize), stride = layout.valuesPerAnchor
        for (i, anchor) in layout.anchors.enumerated() {
            let logit = min(max(scores[i], -100), 100)
            let score = 1 / (1 + exp(-logit))
            guard score >= minScore else { continue }
            let r = regressors + i * stride
            let cx = r[0] / scale + anchor.x, cy = r[1] / scale + anchor.y
            let w = r[2] / scale, h = r[3] / scale
            guard w > 0, h > 0, cx.isFinite, cy.isFinite else { continue }
            let keypoints = (0..<layout.keypoints).map { k in NormalizedPoint(x: r[4 + 2 * k] / scale + anchor.x, y: r[5 + 2 * k] / scale + anchor.y) }
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
