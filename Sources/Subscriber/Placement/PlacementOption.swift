import PoseCastKit
import PoseMedia

/// `--placement` of the subscriber: `auto` (default: the publisher's depth where its
/// source has depth, the ground plane otherwise), `ground`, `depth:METRES`,
/// `plane:NX,NY,NZ,OFFSET` (repeat with `;` for several planes, the nearest hit wins;
/// the plane is `n · p = OFFSET`), or `publisher` (the publisher's depth only).
public enum PlacementOption {
    public static func parse(_ text: String) throws(CommandError) -> PlacementMode {
        let t = text.trimmingCharacters(in: .whitespaces)
        if t == "auto" { return .auto }
        if t == "ground" { return .groundPlane }
        if t == "publisher" { return .publisherDepth }
        if t.hasPrefix("depth:") {
            guard let d = Float(t.dropFirst(6)), d.isFinite, d > 0 else {
                throw CommandError("placement depth must be a positive number of metres, e.g. depth:1.5, got \"\(t)\"")
            }
            return .fixedDepth(d)
        }
        if t.hasPrefix("plane:") {
            var planes: [Plane] = []
            for spec in t.dropFirst(6).split(separator: ";") {
                let numbers = spec.split(separator: ",").map { Float($0.trimmingCharacters(in: .whitespaces)) }
                guard numbers.count == 4, numbers.allSatisfy({ $0?.isFinite == true }) else {
                    throw CommandError("a plane is NX,NY,NZ,OFFSET (four finite numbers), got \"\(spec)\"")
                }
                let n = Vector3(numbers[0]!, numbers[1]!, numbers[2]!)
                guard n.length > 1e-6 else { throw CommandError("plane normal (\(spec)) must not be zero") }
                // n·p = offset with a unit normal: scale the offset with the normal.
                planes.append(Plane(normal: n, through: n.normalized * (numbers[3]! / n.length)))
            }
            guard !planes.isEmpty else { throw CommandError("plane: needs at least one NX,NY,NZ,OFFSET") }
            return .planes(planes)
        }
        throw CommandError("--placement must be auto, ground, depth:METRES, plane:NX,NY,NZ,OFFSET[;…] or publisher, got \"\(t)\"")
    }
}
