// swift-tools-version:6.0
// A program of its own that publishes its own frames, each with the camera pose it was
// drawn from, through PoseCast's `Publisher` library: what another package depending
// on PoseCast looks like. Built by the test command (Tests/SystemTests/ExampleSystemTests).
import PackageDescription

let package = Package(
    name: "PublishOwnFrames",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "PoseCast", path: "../.."),
    ],
    targets: [
        .executableTarget(name: "publish-own-frames", dependencies: [
            .product(name: "Publisher", package: "PoseCast"),
            .product(name: "PoseCastKit", package: "PoseCast"),
        ]),
    ]
)
