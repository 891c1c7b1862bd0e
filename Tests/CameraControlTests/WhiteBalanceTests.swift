import CameraControl
import PoseCastKit
import SyntheticCamera
import TestSupport
import Testing

/// Grey-world white balance on the simulated camera (lit at 5500 K).
@Suite(.tags(.rendering)) struct WhiteBalanceTests {
    @Test(arguments: [Float(2800), 3200, 8000, 10_000])
    func wrongKelvinConvergesBackNearNeutral(kelvin: Float) throws {
        let rig = try SimulatedRig(width: 320, height: 240, lens: LensState(whiteBalanceKelvin: kelvin))
        let first = try rig.step()
        #expect(abs(try #require(first.whiteBalance.measure)) > 0.2, "starts with a clear cast")
        try rig.meter.meter(MeterRequest(routines: [.whiteBalance], meteringMode: .uniform))
        let run = try rig.run(until: { $0.whiteBalance.state != .metering }, limit: 10)
        let last = try #require(run.last)
        #expect(last.whiteBalance.state == .converged)
        #expect(abs(try #require(last.whiteBalance.measure)) <= rig.meter.configuration.whiteBalanceTolerance)
        // Grey world over the whole view lands within a few hundred kelvin of the light.
        #expect(abs(try #require(last.whiteBalanceKelvin) - Double(LensState.sceneKelvin)) < 600)
        // Mean chroma of the frame is close to neutral now.
        let m = rig.measureLast(MeteringArea(mode: .uniform))
        #expect(abs(m.meanU) < 3 && abs(m.meanV) < 3)
        #expect(try rig.step().whiteBalance.state == .locked)
    }

    @Test func continuousWhiteBalanceConvergesWithoutACommand() throws {
        let rig = try SimulatedRig(width: 320, height: 240, lens: LensState(whiteBalanceKelvin: 3000))
        let run = try rig.run(until: { $0.whiteBalance.state == .converged }, limit: 10)
        #expect(run.last?.whiteBalance.state == .converged)
        #expect(try #require(run.last?.whiteBalanceKelvin) > 4500)
    }
}
