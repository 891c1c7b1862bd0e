// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "PoseCast",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Publisher", targets: ["Publisher"]),
        .library(name: "Subscriber", targets: ["Subscriber"]),
        .library(name: "Signaling", targets: ["Signaling"]),
        .library(name: "RTCModel", targets: ["RTCModel"]),
        .library(name: "RTCSession", targets: ["RTCSession"]),
        .library(name: "PoseMedia", targets: ["PoseMedia"]),
        .library(name: "PoseCastKit", targets: ["PoseCastKit"]),
        .library(name: "Imaging", targets: ["Imaging"]),
        .library(name: "SyntheticCamera", targets: ["SyntheticCamera"]),
        .library(name: "CameraControl", targets: ["CameraControl"]),
        .library(name: "TagTracking", targets: ["TagTracking"]),
        .executable(name: "posecast-loopback", targets: ["posecast-loopback"]),
        .executable(name: "posecast-scene", targets: ["posecast-scene"]),
        .executable(name: "posecast-signaling", targets: ["posecast-signaling"]),
        .executable(name: "posecast-publisher", targets: ["posecast-publisher"]),
        .executable(name: "posecast-subscriber", targets: ["posecast-subscriber"]),
        .executable(name: "posecast-cascade", targets: ["posecast-cascade"]),
        .executable(name: "posecast-calibrate", targets: ["posecast-calibrate"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
    ],
    targets: [
        // ---- C boundary ----------------------------------------------------------------
        // GStreamer 1.22 as a system library (headers + pkg-config flags only).
        .systemLibrary(
            name: "CGStreamer",
            pkgConfig: "gstreamer-1.0 gstreamer-webrtc-1.0 gstreamer-sdp-1.0 gstreamer-rtp-1.0 gstreamer-video-1.0 gstreamer-app-1.0",
            providers: [.apt([
                "libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev",
                "libgstreamer-plugins-bad1.0-dev", "libnice-dev",
            ])]
        ),
        // libnice, for the ICE agent's local addresses (RTCSession.ICEAddresses).
        .systemLibrary(name: "CNice", pkgConfig: "nice", providers: [.apt(["libnice-dev"])]),
        // cairo (2D vector drawing and text) for the annotation sprites the publisher blends into frames.
        .systemLibrary(name: "CCairo", pkgConfig: "cairo", providers: [.apt(["libcairo2-dev"])]),
        // The GStreamer C that must be C: pose GstMeta, the RTP header extension subclass,
        // fixed-arity wrappers for variadic functions and macros.
        .target(name: "CGstShim", dependencies: ["CGStreamer"]),
        // The ECDSA DTLS certificate (OpenSSL's libcrypto, which GStreamer's dtls plugin
        // links too; headers from libssl-dev).
        .target(name: "CDTLS", linkerSettings: [.linkedLibrary("crypto")]),
        // V4L2 ioctls (function-like macros Swift cannot import) behind a few C wrappers.
        .target(name: "CV4L2"),
        // Xlib's error handler for the expert's window (Xlib's default exits the process).
        .target(name: "CX11", linkerSettings: [.linkedLibrary("X11"), .linkedLibrary("Xext")]),
        // LiteRT's C API (libLiteRt.so from the ai-edge-litert wheel, which ships no
        // headers), declared by hand and loaded with dlopen: a missing library is a
        // run-time error naming the file, never a build or link failure.
        .target(name: "CLiteRT", linkerSettings: [.linkedLibrary("dl")]),
        // AprilTag 3 (Debian's libapriltag-dev): tag36h11 detection, each tag's pose, and
        // the library's drawing of a tag, behind plain C calls.
        // image_u8_destroy is in the library's utils half.
        .target(name: "CAprilTag", linkerSettings: [.linkedLibrary("apriltag"), .linkedLibrary("apriltag-utils")]),

        // ---- shared libraries ------------------------------------------------------------
        // The domain kit, no GStreamer: pose wire format, geometry and placement, trajectories
        // and pose sources, control messages, annotation styles.
        .target(name: "PoseCastKit"),
        // Raw I420 frames: planes to write, read-only views, BT.601 (the renderer, the meter
        // and the marker detector all use it).
        .target(name: "Imaging"),
        // The synthetic AR camera: a known 3D scene rendered from a pose through a simulated
        // lens, into I420. Pure Swift.
        .target(name: "SyntheticCamera", dependencies: ["PoseCastKit", "Imaging"]),
        // The publisher's video effects without GStreamer: crop windows and their
        // intrinsics, the framing controller, crop-and-scale, the background compositor,
        // mattes, and the segmentation and face models run by LiteRT.
        .target(name: "VideoEffects", dependencies: ["PoseCastKit", "Imaging", "SyntheticCamera", "CLiteRT"]),
        // Remote camera control: software metering (sharpness, brightness, grey world),
        // contrast autofocus, exposure and white-balance routines with their modes, and the
        // backends they drive (V4L2 by CID; the simulated camera's lens).
        .target(name: "CameraControl", dependencies: ["PoseCastKit", "Imaging", "SyntheticCamera", "CV4L2"]),
        // A camera's pose from the AprilTags it sees: the tag map (where the tags are in
        // the world), the detector, the pose solver, the tags' printed patterns.
        .target(name: "TagTracking", dependencies: ["PoseCastKit", "Imaging", "CAprilTag"]),
        // The values a WebRTC session's logic reasons about (descriptions, candidates,
        // reception reports, the delay trend, codecs, errors), without GStreamer: the pure
        // session machines import this instead of RTCSession, which re-exports it.
        .target(name: "RTCModel", dependencies: ["PoseCastKit"]),
        // Swift wrapper around webrtcbin; knows nothing of poses.
        .target(name: "RTCSession", dependencies: ["RTCModel", "CGStreamer", "CGstShim", "CDTLS", "CNice"]),
        // Pose media, both roles: the pose GstMeta and RTP header extension, the tagger and
        // reader probes, codecs, frame stamps, codec timing and frame logs.
        .target(name: "PoseMedia", dependencies: ["RTCModel", "RTCSession", "PoseCastKit", "Imaging", "CGStreamer", "CGstShim"]),
        // Two-way voice, both roles: microphone and speaker specs, the Opus send and receive
        // chains, echo cancellation (webrtcdsp), mute, level meters, tone bursts and tone
        // detection for the A/V tests.
        .target(name: "Voice", dependencies: ["RTCSession", "PoseCastKit", "CGStreamer", "CGstShim"]),
        // Signaling protocol (Codable), the hub state machine, the WebSocket server
        // (Hummingbird), the WebSocket client and the link both roles keep to the server.
        .target(name: "Signaling", dependencies: [
            "PoseCastKit",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "HummingbirdTLS", package: "hummingbird"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], resources: [
            // The browser console (plain HTML, JavaScript, CSS), served at `/`.
            .copy("Console"),
        ]),
        // Janus (the SFU) over its WebSocket API: the session, plugin handles, the
        // VideoRoom requests a publisher and a subscriber make.
        .target(name: "SFU", dependencies: [
            "Signaling", "PoseCastKit",
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // How the executables speak: events and status as JSON lines or text, termination
        // signals, the process's own resources.
        .target(name: "NodeOutput", dependencies: ["PoseCastKit", .product(name: "Logging", package: "swift-log")]),
        // The ICE options both executables take (STUN, TURN, relay-only, addresses).
        .target(name: "NetworkOptions", dependencies: [
            "Voice", "NodeOutput",
            "RTCSession", .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        // ---- the two roles ---------------------------------------------------------------
        // The field camera: sources (V4L2, synthetic, test), pose attach, metering and camera
        // control, the annotation overlay, one encoder for every subscriber branch, its
        // session node and control channel, status and events.
        .target(name: "Publisher", dependencies: [
            "PoseMedia", "RTCModel", "RTCSession", "PoseCastKit", "Imaging", "SyntheticCamera", "CameraControl", "Signaling",
            "NodeOutput", "CGStreamer", "CGstShim", "CCairo", "VideoEffects", "Voice", "SFU", "TagTracking",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
        ]),
        // The remote expert: decoding with each frame's pose, tap placement, marker checks,
        // its session node, commands, status and events. No cairo, V4L2 or renderer.
        .target(name: "Subscriber", dependencies: [
            "PoseMedia", "RTCModel", "RTCSession", "PoseCastKit", "Imaging", "Signaling", "NodeOutput", "CGStreamer", "CGstShim", "CX11", "Voice", "SFU",
            .product(name: "Logging", package: "swift-log"),
        ]),

        // ---- executables: argument parsing, then build and run ----------------------------
        // The embedded server's front-door limits as options, for both executables that serve.
        .target(name: "ServerOptions", dependencies: [
            "Signaling", .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        .executableTarget(name: "posecast-signaling", dependencies: [
            "Signaling", "ServerOptions", "NodeOutput", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "posecast-publisher", dependencies: [
            "Publisher", "PoseMedia", "PoseCastKit", "Signaling", "RTCSession", "NodeOutput", "NetworkOptions", "Voice",
            "ServerOptions", "CameraControl", "TagTracking",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "posecast-subscriber", dependencies: [
            "Subscriber", "PoseMedia", "PoseCastKit", "Signaling", "RTCSession", "NodeOutput", "NetworkOptions", "Voice",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Relays a room's feeds from an origin Janus to edge Janus servers (docs/SCALING.md).
        .executableTarget(name: "posecast-cascade", dependencies: [
            "SFU", "NodeOutput", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(
            name: "posecast-loopback",
            dependencies: [
                "Publisher", "Subscriber", "PoseMedia", "RTCSession", "PoseCastKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "posecast-scene", dependencies: [
            "SyntheticCamera", "Imaging", "PoseCastKit", "TagTracking", .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        .executableTarget(name: "posecast-calibrate", dependencies: ["TagTracking", "PoseCastKit", "Imaging", .product(name: "ArgumentParser", package: "swift-argument-parser")]),

        // ---- tests: one harness per layer -----------------------------------------------------
        // Time limits on waits, fuzz inputs, certificates, for every test target.
        .target(name: "TestSupport", dependencies: ["PoseCastKit", "NodeOutput"], path: "Tests/TestSupport"),
        .testTarget(name: "PoseCastKitTests", dependencies: ["PoseCastKit"]),
        .testTarget(name: "ImagingTests", dependencies: ["Imaging"]),
        // The effects on real photographs and rendered frames (models from scripts/effects-setup).
        .testTarget(name: "VideoEffectsTests", dependencies: [
            "VideoEffects", "Publisher", "Imaging", "SyntheticCamera", "PoseCastKit", "TestSupport",
        ]),
        // Voice chains in real pipelines: echo cancellation, tone detection, level meters.
        .testTarget(name: "VoiceTests", dependencies: ["Voice", "RTCSession", "CGStreamer", "CGstShim", "TestSupport"]),
        .testTarget(name: "SyntheticCameraTests", dependencies: ["SyntheticCamera", "Imaging", "PoseCastKit"]),
        // Tag tracking on rendered tags against the pose they were rendered from.
        .testTarget(name: "TagTrackingTests", dependencies: ["TagTracking", "PoseCastKit", "Imaging"]),
        .testTarget(name: "CameraControlTests", dependencies: ["CameraControl", "SyntheticCamera", "Imaging", "PoseCastKit", "CV4L2", "TestSupport"]),
        .testTarget(name: "RTCSessionTests", dependencies: ["RTCSession", "CGStreamer", "TestSupport"]),
        // Pose media without network: codec chains, the extension fuzzer, frame logs.
        .testTarget(name: "PoseMediaTests", dependencies: ["PoseMedia", "RTCSession", "PoseCastKit", "TestSupport"]),
        // The publisher's parts: overlay, inputs, control channel, its session state machine.
        .testTarget(name: "PublisherTests", dependencies: [
            "Publisher", "Subscriber", "CGStreamer", "PoseMedia", "RTCSession", "PoseCastKit", "Signaling", "SyntheticCamera", "Imaging", "TestSupport",
            "CameraControl",
        ]),
        // The subscriber's parts: marker detection and watching, its session state machine.
        .testTarget(name: "SubscriberTests", dependencies: [
            "Subscriber", "PoseMedia", "RTCSession", "PoseCastKit", "Signaling", "Imaging", "SyntheticCamera", "TestSupport",
        ]),
        // Publisher and subscriber media as two webrtcbins in one process (loopback, loss).
        .testTarget(name: "MediaPairTests", dependencies: [
            "Publisher", "Subscriber", "PoseMedia", "RTCSession", "PoseCastKit", "SyntheticCamera", "TestSupport",
        ]),
        .testTarget(name: "SignalingTests", dependencies: [
            "Signaling", "SFU", "TestSupport", "PoseCastKit", .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Real executables on loopback (built by `swift build` before the tests run).
        // Raw signaling clients (`Signaling`) stand in for hostile peers.
        .testTarget(name: "SystemTests", dependencies: [
            "PoseCastKit", "TestSupport", "NodeOutput", "Signaling", "TagTracking", .product(name: "Logging", package: "swift-log"),
        ]),
    ]
)
