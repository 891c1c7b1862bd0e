// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "PoseCast",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RTCSession", targets: ["RTCSession"]),
        .library(name: "PoseCastKit", targets: ["PoseCastKit"]),
        .library(name: "PoseCastMedia", targets: ["PoseCastMedia"]),
        .library(name: "Signaling", targets: ["Signaling"]),
        .library(name: "SyntheticCamera", targets: ["SyntheticCamera"]),
        .executable(name: "posecast-loopback", targets: ["posecast-loopback"]),
        .executable(name: "posecast-scene", targets: ["posecast-scene"]),
        .executable(name: "posecast-signaling", targets: ["posecast-signaling"]),
        .executable(name: "posecast-publisher", targets: ["posecast-publisher"]),
        .executable(name: "posecast-subscriber", targets: ["posecast-subscriber"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.0"),
    ],
    targets: [
        // GStreamer 1.22 as a system library (headers + pkg-config flags only).
        .systemLibrary(
            name: "CGStreamer",
            pkgConfig: "gstreamer-1.0 gstreamer-webrtc-1.0 gstreamer-sdp-1.0 gstreamer-rtp-1.0 gstreamer-video-1.0 gstreamer-app-1.0",
            providers: [.apt([
                "libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev",
                "libgstreamer-plugins-bad1.0-dev", "libnice-dev",
            ])]
        ),
        // cairo (2D vector drawing and text) for the annotation sprites the publisher blends into frames.
        .systemLibrary(name: "CCairo", pkgConfig: "cairo", providers: [.apt(["libcairo2-dev"])]),
        // The C that must be C: pose GstMeta, the RTP header extension subclass,
        // and fixed-arity wrappers for variadic functions and macros; the ECDSA DTLS
        // certificate (OpenSSL's libcrypto, which GStreamer's dtls plugin links too;
        // headers from libssl-dev).
        .target(name: "CGstShim", dependencies: ["CGStreamer"], linkerSettings: [.linkedLibrary("crypto")]),
        // Pose wire format and other domain code shared by both sides; no GStreamer.
        .target(name: "PoseCastKit"),
        // The synthetic AR camera: a known 3D scene rendered from a pose through a simulated
        // lens, into I420. Pure Swift; optimised even in debug builds, because the tests
        // render real-time video with it.
        .target(name: "SyntheticCamera", dependencies: ["PoseCastKit"],
                swiftSettings: [.unsafeFlags(["-O", "-enforce-exclusivity=unchecked"], .when(configuration: .debug))]),
        // V4L2 ioctls (function-like macros Swift cannot import) behind a few C wrappers.
        .target(name: "CV4L2"),
        // Remote camera control: software metering (sharpness, brightness, grey world),
        // contrast autofocus, exposure and white-balance routines with their modes, and the
        // backends they drive (V4L2 by CID; the simulated camera's lens).
        .target(name: "CameraControl", dependencies: ["PoseCastKit", "SyntheticCamera", "CV4L2"],
                swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),
        // Swift wrapper around webrtcbin; knows nothing of poses.
        .target(name: "RTCSession", dependencies: ["CGStreamer", "CGstShim"]),
        // Publisher and subscriber media pipelines (pose attach/read, codecs).
        .target(name: "PoseCastMedia", dependencies: ["RTCSession", "PoseCastKit", "SyntheticCamera", "CameraControl", "CGStreamer", "CGstShim", "CCairo"]),
        // Signaling protocol (Codable), the hub state machine, the WebSocket server
        // (Hummingbird) and the WebSocket client both executables use.
        .target(name: "Signaling", dependencies: [
            "PoseCastKit",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "HummingbirdTLS", package: "hummingbird"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        // Publisher and subscriber sessions: signaling ⇄ webrtcbin glue, control channel.
        .target(name: "PoseCastSession", dependencies: [
            "PoseCastMedia", "RTCSession", "PoseCastKit", "Signaling", "CameraControl",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
        ]),
        .executableTarget(name: "posecast-signaling", dependencies: [
            "Signaling", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "posecast-publisher", dependencies: [
            "PoseCastSession", "PoseCastMedia", "PoseCastKit", "Signaling", "RTCSession",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "posecast-subscriber", dependencies: [
            "PoseCastSession", "PoseCastMedia", "PoseCastKit", "Signaling", "RTCSession",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(
            name: "posecast-loopback",
            dependencies: [
                "PoseCastMedia", "RTCSession", "PoseCastKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "posecast-scene", dependencies: [
            "SyntheticCamera", "PoseCastKit", .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // Time limits on waits, for every test target (the deterministic random source,
        // SplitMix64, is PoseCastKit's).
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "PoseCastKitTests", dependencies: ["PoseCastKit"]),
        .testTarget(name: "SyntheticCameraTests", dependencies: ["SyntheticCamera", "PoseCastKit"]),
        .testTarget(name: "CameraControlTests", dependencies: ["CameraControl", "SyntheticCamera", "PoseCastKit", "CV4L2"]),
        .testTarget(name: "RTCSessionTests", dependencies: ["RTCSession"]),
        .testTarget(name: "PoseCastMediaTests", dependencies: ["PoseCastMedia", "RTCSession", "PoseCastKit", "SyntheticCamera", "TestSupport"]),
        .testTarget(name: "SignalingTests", dependencies: [
            "Signaling", "TestSupport", "PoseCastKit", .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "PoseCastSessionTests", dependencies: ["PoseCastSession", "PoseCastKit", "Signaling", "PoseCastMedia", "RTCSession", "TestSupport"]),
        // Real executables on loopback (built by `swift build` before the tests run).
        .testTarget(name: "SystemTests", dependencies: ["PoseCastKit", "TestSupport"]),
    ]
)
