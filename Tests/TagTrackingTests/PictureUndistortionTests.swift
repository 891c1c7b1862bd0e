import Foundation
import Imaging
import PoseCastKit
import Testing
@testable import TagTracking

/// A calibrated lens's distortion taken out of the picture itself (`PictureUndistortion`):
/// the picture sent then agrees with the pinhole intrinsics sent with it.
@Suite struct PictureUndistortionTests {
    static let width = 640, height = 480
    static let intrinsics = CameraIntrinsics(horizontalFOVDegrees: 60, aspect: 4.0 / 3.0)
    /// An ordinary webcam's barrel distortion (the calibration tests' lens).
    static let barrel = LensDistortion(k1: -0.12, k2: 0.03)
    /// Two tags near the picture's left and right edges, where the distortion is largest.
    static let pair = try! TagMap([TagMap.Tag(id: 0, size: 0.4, position: Vector3(-0.85, 0, 0)),
                                   TagMap.Tag(id: 1, size: 0.4, position: Vector3(0.85, 0, 0))])
    static let camera = CameraModel(position: Vector3(0, 2.2, 0.6), orientation: .lookAt(eye: Vector3(0, 2.2, 0.6), target: .zero),
                                    intrinsics: intrinsics)

    /// `grey` as the luma of an I420 picture (grey chroma), through `undistortion` when given.
    static func picture(_ grey: [UInt8], undistortion: PictureUndistortion? = nil) throws -> I420Image {
        var image = try I420Image(width: width, height: height)
        image.withPlanes { planes in
            for row in 0..<height { (planes.y + row * planes.yStride).update(from: grey.withUnsafeBufferPointer { $0.baseAddress! + row * width }, count: width) }
            for row in 0..<height / 2 {
                (planes.u + row * planes.uStride).update(repeating: 128, count: width / 2)
                (planes.v + row * planes.vStride).update(repeating: 128, count: width / 2)
            }
            undistortion?.apply(to: planes)
        }
        return image
    }

    static func sightings(_ image: I420Image) throws -> [TagSighting] {
        let detector = try TagDetector(decimate: 2)
        return try image.withFrameView { view in
            try detector.detect(grey: view.y, width: view.width, height: view.height, stride: view.yStride, intrinsics: intrinsics)
        }
    }

    static func pose(_ sightings: [TagSighting]) -> CameraModel? {
        TagPoseSolver.solve(sightings, map: pair, intrinsics: intrinsics, width: width, height: height)?.camera
    }

    @Test("a barrel lens's picture, undistorted: the tags' corners within 0.5 px of a pinhole's picture and the pose as good as the pinhole picture's (within 1.5 times its error) with no correction of the corners; left distorted, corners several pixels off and the pose worse")
    func undistortedPicture() throws {
        let renderer = TagRenderer(map: Self.pair)
        let pinhole = try Self.sightings(Self.picture(renderer.render(camera: Self.camera, width: Self.width, height: Self.height)))
        let lensGrey = renderer.render(camera: Self.camera, width: Self.width, height: Self.height, distortion: Self.barrel)
        let undistortion = PictureUndistortion(distortion: Self.barrel, intrinsics: Self.intrinsics)
        let started = DispatchTime.now().uptimeNanoseconds
        let corrected = try Self.picture(lensGrey, undistortion: undistortion)
        let firstMs = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
        let again = DispatchTime.now().uptimeNanoseconds
        _ = try Self.picture(lensGrey, undistortion: undistortion)
        print("undistortion at 640×480: first picture (with its map) \(firstMs) ms, the next \(Double(DispatchTime.now().uptimeNanoseconds - again) / 1e6) ms")
        let fixed = try Self.sightings(corrected), raw = try Self.sightings(Self.picture(lensGrey))
        #expect(Set(pinhole.map(\.id)) == [0, 1] && Set(fixed.map(\.id)) == [0, 1] && Set(raw.map(\.id)) == [0, 1])

        func worstCorner(_ seen: [TagSighting]) throws -> Double {
            var worst = 0.0
            for s in seen {
                let truth = try #require(pinhole.first { $0.id == s.id })
                for (a, b) in zip(s.corners, truth.corners) {
                    let d = a - b
                    worst = max(worst, (d * d).sum().squareRoot())
                }
            }
            return worst
        }
        #expect(try worstCorner(fixed) < 0.5)
        #expect(try worstCorner(raw) > 2, "the lens must move the corners for this test to mean anything")

        // The pinhole's own picture gives the pose only as well as its corners are found
        // (about 1 cm at 2.4 m here): the undistorted picture's must be as good.
        let fixedPose = try #require(Self.pose(fixed)), pinholePose = try #require(Self.pose(pinhole))
        let (fixedError, pinholeError) = (fixedPose.position.distance(to: Self.camera.position), pinholePose.position.distance(to: Self.camera.position))
        #expect(fixedError < max(pinholeError * 1.5, 0.005),
                "undistorted \(fixedError) m off, the pinhole's picture \(pinholeError) m")
        if let rawPose = Self.pose(raw) {
            #expect(rawPose.position.distance(to: Self.camera.position) > fixedError * 3)
        }
    }

    @Test("no distortion leaves the picture as it was; a pincushion lens's corners, seen from outside the picture, come out black with grey chroma")
    func edges() throws {
        var grey = [UInt8](repeating: 0, count: Self.width * Self.height)
        for i in grey.indices { grey[i] = UInt8(truncatingIfNeeded: i * 7 + i / Self.width) }
        let plain = try Self.picture(grey)
        #expect(try Self.picture(grey, undistortion: PictureUndistortion(distortion: .none, intrinsics: Self.intrinsics)) == plain)

        let pincushion = try Self.picture([UInt8](repeating: 200, count: Self.width * Self.height),
                                          undistortion: PictureUndistortion(distortion: LensDistortion(k1: 0.3), intrinsics: Self.intrinsics))
        let (y0, centre) = (pincushion.bytes[0], pincushion.bytes[Self.height / 2 * Self.width + Self.width / 2])
        #expect(y0 == 0 && centre == 200)
        let chroma = Self.width * Self.height
        #expect(pincushion.bytes[chroma] == 128)
    }
}
