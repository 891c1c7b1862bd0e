import ArgumentParser
import Foundation
import SyntheticCamera

/// The scene's named points (disc centres, box top corners) with their true world
/// positions: what `scripts/bench-annotation` taps on.
struct Features: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the scene's named features and their world positions.")

    @Flag(help: "One JSON object per line: {\"name\", \"kind\", \"position\": [x, y, z]}.") var json = false

    func run() throws {
        for feature in SyntheticScene.standard.features {
            let p = feature.position
            if json {
                let object: [String: Any] = ["name": feature.name, "kind": "\(feature.kind)",
                                             "position": [Double(p.x), Double(p.y), Double(p.z)]]
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                print(String(decoding: data, as: UTF8.self))
            } else {
                print(String(format: "%-16@ %-14@ (%.3f, %.3f, %.3f)", feature.name, "\(feature.kind)", p.x, p.y, p.z))
            }
        }
    }
}
