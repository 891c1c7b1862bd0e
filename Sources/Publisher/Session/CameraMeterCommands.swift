import CameraControl
import PoseCastKit

/// The control channel's camera requests, answered by the publisher's metering
/// routines. A `meter` that names a metering mode also makes it the publisher's
/// setting (the auto area every continuous routine follows).
public struct CameraMeterCommands: CameraCommands {
    public let meter: CameraMeter

    public init(meter: CameraMeter) { self.meter = meter }

    public func focus(at point: NormalizedPoint, mode: FocusMode) throws(ControlError) {
        do throws(CameraMeterError) { try meter.focus(point: point, mode: mode) } catch { throw error.controlError(id: nil) }
    }

    public func meter(_ request: MeterRequest) throws(ControlError) -> [MeteringRoutine] {
        do throws(CameraMeterError) {
            if let mode = request.meteringMode { meter.setMeteringMode(mode) }
            return try meter.meter(request).skipped
        } catch {
            throw error.controlError(id: nil)
        }
    }

    public func setMeteringMode(_ mode: MeteringMode) throws(ControlError) {
        meter.setMeteringMode(mode)
    }

    public func lock(_ routines: [MeteringRoutine]) throws(ControlError) -> [MeteringRoutine] {
        do throws(CameraMeterError) { return try meter.lock(routines: routines).skipped } catch { throw error.controlError(id: nil) }
    }

    public func unlock(_ routines: [MeteringRoutine]) throws(ControlError) -> [MeteringRoutine] {
        do throws(CameraMeterError) { return try meter.unlock(routines: routines).skipped } catch { throw error.controlError(id: nil) }
    }
}
