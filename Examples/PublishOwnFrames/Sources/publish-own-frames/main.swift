// Publishes a picture this program draws itself (a bar sweeping over a gradient) as if
// a camera circling the origin had taken it, each frame with that camera's pose, on an
// embedded signaling server: `posecast-subscriber --signaling ws://127.0.0.1:PORT/`
// (or the browser console at the printed URL) shows it, reads each frame's pose, and
// places taps in the world.
//
//   publish-own-frames [PORT] [SECONDS]     (defaults: 8443, run until interrupted;
//                                            port 0: any free port, named in the
//                                            first line, {"event":"listening","url":…})
import Foundation
import PoseCastKit
import Publisher

let arguments = CommandLine.arguments.dropFirst()
let port = arguments.first.flatMap { Int($0) } ?? 8443
let seconds = arguments.dropFirst().first.flatMap { Double($0) }
let (width, height, fps) = (640, 480, 30)

let feed: FrameFeed
do { feed = try FrameFeed(width: width, height: height, fps: fps) } catch {
    FileHandle.standardError.write(Data("publish-own-frames: \(error)\n".utf8))
    exit(2)
}
var config = PublisherAppConfig()
config.media.source = .frames(feed)
config.media.width = width
config.media.height = height
config.media.fps = fps
config.media.adaptBitrate = true
config.media.voice = nil
config.listen = ("127.0.0.1", port)
config.json = true

/// The camera 2 m from the origin, 1.5 m up, circling once every 12 s and looking at the origin.
func pose(at time: Double) -> FramePose {
    let angle = Float(time * 2 * .pi / 12)
    let eye = Vector3(2 * sin(angle), 1.5, 2 * cos(angle))
    return FramePose(frameID: 0, captureTimeNanos: 0, position: eye,
                     orientation: .lookAt(eye: eye, target: Vector3(0, 0, 0)),
                     intrinsics: CameraIntrinsics(horizontalFOVDegrees: 60, aspect: Float(width) / Float(height)))
}

/// One I420 frame: a grey gradient with a bright bar where the sweep is.
func draw(into frame: inout [UInt8], at time: Double) {
    let bar = Int(time * 200) % width
    for y in 0..<height {
        for x in 0..<width {
            frame[y * width + x] = abs(x - bar) < 12 ? 235 : UInt8(40 + (x + y) * 150 / (width + height))
        }
    }
    frame.replaceSubrange(width * height..<frame.count, with: repeatElement(128, count: width * height / 2))
}

do {
    let app = try await PublisherApp.build(config)
    let frames = Task.detached {
        var frame = [UInt8](repeating: 0, count: feed.frameBytes)
        let start = Date()
        var next = 0.0
        while !Task.isCancelled {
            let now = Date().timeIntervalSince(start)
            if now < next { try? await Task.sleep(for: .seconds(next - now)) }
            next += 1 / Double(fps)
            draw(into: &frame, at: now)
            do { try feed.push(i420: frame, pose: pose(at: now)) } catch {
                FileHandle.standardError.write(Data("publish-own-frames: \(error)\n".utf8))
                if case .notRunning? = error as? FrameFeedError { break }   // the publisher stopped
            }
        }
    }
    let server = Task { try await app.run() }
    // After SECONDS: the frames stop first (no push meets a stopped publisher), then the server.
    let timer = seconds.map { seconds in
        Task {
            guard (try? await Task.sleep(for: .seconds(seconds))) != nil else { return }
            frames.cancel()
            _ = await frames.result
            server.cancel()
        }
    }
    _ = await server.result   // SIGINT or SIGTERM end it too
    timer?.cancel()
    frames.cancel()
    let counts = feed.counts
    print("{\"event\":\"exampleDone\",\"pushed\":\(counts.pushed),\"dropped\":\(counts.dropped)}")
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(2)
}
