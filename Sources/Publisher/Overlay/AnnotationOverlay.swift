package import CGStreamer
import CGstShim
import PoseCastKit
import RTCSession
import Synchronization
import PoseMedia

/// What `AnnotationOverlay.draw` did with one frame. Every annotation is counted once:
/// `drawn + behindCamera + offScreen` is the number of annotations (when the pose is
/// usable; an annotation whose sprite could not be drawn is left out, see the stats).
package struct OverlayDrawResult: Sendable, Hashable {
    /// Anchor inside the frame: the mark was blended (cut at the frame's edges where it crosses them).
    package var drawn = 0
    /// Of those drawn, the ones behind something nearer (the frame's depth says so): drawn
    /// with the hidden look.
    package var hidden = 0
    /// Behind (or on) the camera plane: nothing drawn.
    package var behindCamera = 0
    /// In front of the camera but the anchor lies outside the frame; whatever part of the
    /// mark or label still reaches into the frame is blended, clipped.
    package var offScreen = 0
    /// The frame's pose is flagged `.missing`: nothing drawn.
    package var poseMissing = false
    /// The frame could not be mapped for writing (not writable, too small) or a blend failed;
    /// the counts still say what was to be drawn.
    package var failed = false

    package init(drawn: Int = 0, hidden: Int = 0, behindCamera: Int = 0, offScreen: Int = 0, poseMissing: Bool = false,
                 failed: Bool = false) {
        self.drawn = drawn; self.hidden = hidden; self.behindCamera = behindCamera; self.offScreen = offScreen
        self.poseMissing = poseMissing; self.failed = failed
    }
}

/// Counters of the overlay since it was created.
package struct AnnotationOverlayStats: Sendable, Hashable {
    package var frames: UInt64 = 0
    package var framesWithoutPose: UInt64 = 0
    package var framesFailed: UInt64 = 0
    /// Annotation marks blended with their anchor in the frame.
    package var marksDrawn: UInt64 = 0
    /// Of those, marks drawn hidden (behind something nearer).
    package var marksHidden: UInt64 = 0
    package var spritesBuilt: UInt64 = 0
    /// Sprites cairo could not draw (those annotations are skipped).
    package var spriteFailures: UInt64 = 0
}

/// The publisher's annotation overlay: keeps the annotations in world coordinates and
/// draws each one into every outgoing raw I420 frame at the place that frame's pose
/// projects it to, so a mark stays on its object while the camera moves.
///
/// Each annotation's look is drawn once with cairo (`AnnotationSprite`, cached by id,
/// kind, label, colour and scale); per frame the work is a projection per annotation and,
/// far ones first, a `gst_video_overlay_composition_blend` of each placed sprite.
///
/// Hidden marks: where the frame's depth is known (the synthetic camera), an anchor
/// farther than what the frame shows at its pixel is behind something: its mark gets the
/// hidden look (`AnnotationSpriteKey.hidden`), so a pin does not seem to sit on the
/// object in front of what it marks.
///
/// Placement: the anchor's projection `p` is at pixel coordinates (p.x·width, p.y·height),
/// pixel centres at +0.5; the sprite goes where its anchor pixel lands on the nearest
/// pixel centre, so the mark is centred on the projection within half a pixel.
package final class AnnotationOverlay: Sendable {
    package let width: Int, height: Int
    private let style: AnnotationStyle
    /// Whether marks get a hidden look (built beside the visible one): only for a source
    /// that knows its depth.
    private let hiddenLook: Bool

    private struct Entry: Sendable {
        var id: String
        var position: Vector3
        var sprite: AnnotationSprite
        /// The hidden look; nil without `hiddenLook` or when cairo could not draw it (the visible one serves).
        var hiddenSprite: AnnotationSprite?
    }
    private struct State: Sendable {
        var entries: [Entry] = []
        var cache: [AnnotationSpriteKey: AnnotationSprite] = [:]
        /// Bumped by every `setAnnotations`; a call that finishes building after a newer
        /// one started does not install its (older) list.
        var generation: UInt64 = 0
        var stats = AnnotationOverlayStats()
        /// The annotations the last frame with a pose drew hidden.
        var hidden: Set<String> = []
    }
    /// Only Swift values inside; sprites leave it retained, so none is freed (a GStreamer
    /// call) while the lock is held: replaced ones are handed out and dropped after it.
    private let state = Mutex(State())

    package init(width: Int, height: Int, hiddenLook: Bool = false) {
        self.width = width; self.height = height; self.hiddenLook = hiddenLook
        style = AnnotationStyle(frameHeight: height)
    }

    package var stats: AnnotationOverlayStats { state.withLock { $0.stats } }

    /// The ids of the annotations the last frame with a pose drew hidden.
    package var hiddenIDs: Set<String> { state.withLock { $0.hidden } }

    /// Replaces the annotations drawn from the next frame on. Callable from any thread;
    /// sprites of annotations whose look changed (or new ones) are drawn here, outside the lock.
    package func setAnnotations(_ list: [Annotation]) {
        let (generation, cached) = state.withLock { s in
            s.generation += 1
            return (s.generation, s.cache)
        }
        var cache: [AnnotationSpriteKey: AnnotationSprite] = [:]
        var entries: [Entry] = []
        var built: UInt64 = 0, failures: UInt64 = 0
        entries.reserveCapacity(list.count)
        func sprite(_ key: AnnotationSpriteKey) -> AnnotationSprite? {
            var sprite = cache[key] ?? cached[key]
            if sprite == nil {
                sprite = AnnotationSprite(key)
                if sprite == nil { failures += 1 } else { built += 1 }
            }
            if let sprite { cache[key] = sprite }
            return sprite
        }
        for annotation in list {
            // Skipped when cairo could not draw it (counted).
            guard let visible = sprite(AnnotationSpriteKey(annotation, style: style)) else { continue }
            let hidden = hiddenLook ? sprite(AnnotationSpriteKey(annotation, style: style, hidden: true)) : nil
            entries.append(Entry(id: annotation.id, position: annotation.position, sprite: visible, hiddenSprite: hidden))
        }
        let replaced = state.withLock { s -> (entries: [Entry], cache: [AnnotationSpriteKey: AnnotationSprite])? in
            s.stats.spritesBuilt += built
            s.stats.spriteFailures += failures
            guard s.generation == generation else { return nil }
            defer { s.entries = entries; s.cache = cache }
            return (s.entries, s.cache)
        }
        _ = replaced   // the old sprites are released here, after the lock
    }

    /// Blends every annotation into `buffer` (borrowed: a writable I420 frame of the
    /// configured size) as projected by `pose`, those behind what `depth` (the frame's own,
    /// when known) shows nearer with the hidden look. Called on the streaming thread.
    package func draw(on buffer: UnsafeMutablePointer<GstBuffer>, pose: FramePose,
                      depth: (any DepthSampler)? = nil) -> OverlayDrawResult {
        guard let camera = CameraModel(pose: pose) else {
            state.withLock { $0.stats.frames += 1; $0.stats.framesWithoutPose += 1 }
            return OverlayDrawResult(poseMissing: true)
        }
        var (result, placed, hidden) = layout(camera, depth: depth)
        if !placed.isEmpty, !blend(placed, into: buffer) { result.failed = true }
        state.withLock { s in
            s.stats.frames += 1
            s.hidden = hidden
            if result.failed { s.stats.framesFailed += 1 } else {
                s.stats.marksDrawn += UInt64(result.drawn); s.stats.marksHidden += UInt64(result.hidden)
            }
        }
        return result
    }

    /// A sprite placed in a frame: its top-left pixel at (x, y), possibly outside the frame.
    struct Placement {
        var x: Int, y: Int
        var sprite: AnnotationSprite
    }

    /// Projects every annotation with `camera`: the counts, and the sprites that reach into
    /// the frame in painter's order (far first, so near marks cover them).
    func layout(_ camera: CameraModel, depth: (any DepthSampler)? = nil) -> (OverlayDrawResult, [Placement], hidden: Set<String>) {
        // Retained copies: a concurrent `setAnnotations` cannot free these sprites mid-frame.
        let entries = state.withLock { $0.entries }
        var result = OverlayDrawResult()
        var hidden = Set<String>()
        var placed: [(depth: Float, index: Int, placement: Placement)] = []
        placed.reserveCapacity(entries.count)
        for (index, entry) in entries.enumerated() {
            guard let projection = camera.project(entry.position) else {
                result.behindCamera += 1
                continue
            }
            let inImage = projection.isInImage
            if inImage { result.drawn += 1 } else { result.offScreen += 1 }
            var sprite = entry.sprite
            if inImage, let depth, Self.isHidden(depth: projection.depth, at: projection.point, in: depth,
                                                  width: width, height: height) {
                result.hidden += 1
                hidden.insert(entry.id)
                sprite = entry.hiddenSprite ?? sprite
            }
            if let spot = place(sprite, projection.point, clampToFrame: inImage) {
                placed.append((projection.depth, index, Placement(x: spot.x, y: spot.y, sprite: sprite)))
            }
        }
        // Equal depths keep the list order (later on top), so frames do not flicker.
        placed.sort { $0.depth != $1.depth ? $0.depth > $1.depth : $0.index < $1.index }
        return (result, placed.map(\.placement), hidden)
    }

    /// Whether an anchor `depth` metres along the optical axis lies behind what the frame
    /// shows at `point`: the median of the scene's depth there and 2 px to each side (one
    /// sample on a silhouette's edge does not flip it) is nearer by more than 3 % + 2 cm
    /// (an anchor placed on a surface sits at that surface's depth, within the placement's
    /// and the depth map's error). Nothing hit (sky) hides nothing.
    static func isHidden(depth: Float, at point: NormalizedPoint, in scene: any DepthSampler, width: Int, height: Int) -> Bool {
        let dx = 2 / Float(width), dy = 2 / Float(height)
        let offsets: [(Float, Float)] = [(0, 0), (-dx, 0), (dx, 0), (0, -dy), (0, dy)]
        let samples = offsets.map { offset in
            scene.depth(at: NormalizedPoint(x: point.x + offset.0, y: point.y + offset.1)) ?? .infinity
        }.sorted()
        return samples[2] < depth * 0.97 - 0.02
    }

    /// The frame position of the sprite's top-left pixel, or nil when none of it would
    /// reach into the frame. The anchor lands on the pixel whose centre is nearest the
    /// projection; an anchor exactly on the right or bottom edge (inside by `isInImage`)
    /// is kept on the last pixel.
    private func place(_ sprite: AnnotationSprite, _ point: NormalizedPoint,
                       clampToFrame: Bool) -> (x: Int, y: Int)? {
        let (px, py) = CameraModel.pixel(point, width: width, height: height)
        // Far outside (a point near the camera plane projects anywhere): nothing to blend,
        // and no float-to-integer conversion that could trap.
        let reachX = Float(width + sprite.width + 1), reachY = Float(height + sprite.height + 1)
        guard px.isFinite, py.isFinite, abs(px) < reachX, abs(py) < reachY else { return nil }
        var ax = Int(px.rounded(.down)), ay = Int(py.rounded(.down))
        if clampToFrame { ax = min(ax, width - 1); ay = min(ay, height - 1) }
        let x = ax - sprite.anchorX, y = ay - sprite.anchorY
        guard x < width, y < height, x + sprite.width > 0, y + sprite.height > 0 else { return nil }
        return (x, y)
    }

    /// Blends the placed sprites, in order, into the frame.
    ///
    /// `gst_video_blend` (under the composition blend) clips a rectangle at the frame's
    /// edges, negative positions included, but it unpacks and repacks every row it touches
    /// across the *whole* frame width. So each sprite is blended into a view of just the
    /// frame region it covers: the same mapping, plane pointers offset to the region's top
    /// left (kept at even coordinates so the view's 2×2 chroma blocks are the frame's) and
    /// width and height cut to it. The pixels come out identical to one blend of the full
    /// frame (a test checks), at a fraction of the cost for small marks on large frames.
    private func blend(_ placed: [Placement], into buffer: UnsafeMutablePointer<GstBuffer>) -> Bool {
        guard gst_mini_object_is_writable(gcast(UnsafeMutableRawPointer(buffer), to: GstMiniObject.self)) != 0 else {
            return false
        }
        var info = GstVideoInfo()
        guard gst_video_info_set_format(&info, GST_VIDEO_FORMAT_I420, guint(width), guint(height)) != 0 else {
            return false
        }
        var frame = GstVideoFrame()
        guard gst_video_frame_map(&frame, &info, buffer, GST_MAP_WRITE) != 0 else { return false }
        defer { gst_video_frame_unmap(&frame) }
        guard let luma = frame.data.0, let cb = frame.data.1, let cr = frame.data.2 else { return false }
        let strides = (Int(frame.info.stride.0), Int(frame.info.stride.1), Int(frame.info.stride.2))

        var ok = true
        for placement in placed {
            let (x, y, sprite) = (placement.x, placement.y, placement.sprite)
            let x0 = max(x, 0) & ~1, y0 = max(y, 0) & ~1
            let x1 = min(x + sprite.width, width), y1 = min(y + sprite.height, height)
            guard x1 > x0, y1 > y0 else { continue }
            // A plain struct copy: borrows the mapping of `frame`, is never unmapped itself.
            var view = frame
            view.info.width = gint(x1 - x0)
            view.info.height = gint(y1 - y0)
            view.data.0 = luma + y0 * strides.0 + x0
            view.data.1 = cb + y0 / 2 * strides.1 + x0 / 2
            view.data.2 = cr + y0 / 2 * strides.2 + x0 / 2

            // (full) a rectangle referencing the sprite's pixels (borrowed; it adds its own
            // reference) and (full) a composition holding its own reference to the rectangle.
            guard let rectangle = gst_video_overlay_rectangle_new_raw(
                sprite.pixels, gint(x - x0), gint(y - y0), guint(sprite.width), guint(sprite.height),
                AnnotationSprite.flags) else { ok = false; continue }
            let composition = gst_video_overlay_composition_new(rectangle)
            gst_video_overlay_rectangle_unref(rectangle)
            guard let composition else { ok = false; continue }
            if gst_video_overlay_composition_blend(composition, &view) == 0 { ok = false }
            gst_video_overlay_composition_unref(composition)
        }
        return ok
    }
}
