import PoseCastKit

// Exact ray casting of a `SyntheticScene`: the ground truth tests compare the rendered
// video against. The renderer uses the same geometry (ground plane, decal discs, boxes
// in their own frame, analytic spheres) in a form specialised for whole rows.

extension SyntheticScene {
    /// The first surface along `ray` in front of its origin, or nil when it only meets sky.
    /// Discs lie in the ground plane, so a ray meeting the ground inside a disc reports the
    /// disc. The ray's direction need not be of unit length; `distance` is in metres.
    public func intersect(_ ray: CameraRay) -> SceneHit? {
        let length = ray.direction.length
        guard length > 0, length.isFinite, ray.origin.isFinite else { return nil }
        let o = ray.origin, d = ray.direction * (1 / length)
        let near = CameraModel.nearPlane
        var best: SceneHit?

        if abs(d.y) > 1e-9 {
            let t = -o.y / d.y
            if t > near, t.isFinite {
                let p = o + d * t
                let normal = Vector3(0, o.y >= 0 ? 1 : -1, 0)
                best = SceneHit(distance: t, point: Vector3(p.x, 0, p.z), normal: normal, name: "ground", kind: .ground)
                for disc in discs {
                    let dx = p.x - disc.center.x, dz = p.z - disc.center.z
                    if dx * dx + dz * dz <= disc.radius * disc.radius {
                        best = SceneHit(distance: t, point: Vector3(p.x, 0, p.z), normal: normal, name: disc.name, kind: .disc)
                        break
                    }
                }
            }
        }
        for box in boxes {
            guard let (t, localNormal) = box.intersectLocal(origin: box.toLocal(o - box.center), direction: box.toLocal(d)),
                  t > near, t < (best?.distance ?? .infinity) else { continue }
            best = SceneHit(distance: t, point: o + d * t, normal: box.toWorld(localNormal), name: box.name, kind: .box)
        }
        for sphere in spheres {
            let oc = o - sphere.center
            let b = d.dot(oc), c = oc.dot(oc) - sphere.radius * sphere.radius
            let disc = b * b - c
            guard disc >= 0 else { continue }
            let root = disc.squareRoot()
            var t = -b - root
            if t <= near { t = -b + root }  // origin inside the sphere: the far wall
            guard t > near, t < (best?.distance ?? .infinity) else { continue }
            let p = o + d * t
            var n = (p - sphere.center) * (1 / sphere.radius)
            if c < 0 { n = -n }
            best = SceneHit(distance: t, point: p, normal: n, name: sphere.name, kind: .sphere)
        }
        return best
    }
}

extension SceneBox {
    /// Slab test in the box frame (origin relative to the box centre). Returns the entry
    /// distance and the box-frame normal of the entry face; nil on a miss or when the
    /// origin is inside the box (its inside is never drawn).
    func intersectLocal(origin o: Vector3, direction d: Vector3) -> (Float, Vector3)? {
        let h = Vector3(size.x / 2, size.y / 2, size.z / 2)
        var tNear = -Float.infinity, tFar = Float.infinity
        var normal = Vector3.zero
        for axis in 0..<3 {
            let oa = [o.x, o.y, o.z][axis], da = [d.x, d.y, d.z][axis], ha = [h.x, h.y, h.z][axis]
            if abs(da) < 1e-12 {
                if abs(oa) > ha { return nil }
                continue
            }
            let t1 = (-ha - oa) / da, t2 = (ha - oa) / da
            let lo = min(t1, t2), hi = max(t1, t2)
            if lo > tNear {
                tNear = lo
                var n = Vector3.zero
                let s: Float = da > 0 ? -1 : 1
                switch axis { case 0: n.x = s; case 1: n.y = s; default: n.z = s }
                normal = n
            }
            tFar = min(tFar, hi)
        }
        guard tNear <= tFar, tNear > 0 else { return nil }
        return (tNear, normal)
    }
}
