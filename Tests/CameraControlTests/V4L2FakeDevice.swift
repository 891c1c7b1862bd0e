#if os(Linux)
import CameraControl
import Glibc
import Synchronization

/// A V4L2 camera faked at the ioctl boundary: a table of controls, a log of every
/// call in order, and errno refusals on demand. It is as strict as a UVC camera:
/// setting a value off the range or step, a missing menu item, a read-only or
/// disabled control, or a control whose automatic mode is on, fails.
final class FakeV4L2Device: V4L2Device {
    enum Call: Hashable, Sendable, CustomStringConvertible {
        case query(V4L2ControlID)
        case queryMenu(V4L2ControlID, UInt32)
        case get(V4L2ControlID)
        case set(V4L2ControlID, Int32)

        var description: String {
            switch self {
            case let .query(id): "QUERYCTRL \(id)"
            case let .queryMenu(id, i): "QUERYMENU \(id)[\(i)]"
            case let .get(id): "G_CTRL \(id)"
            case let .set(id, v): "S_CTRL \(id) = \(v)"
            }
        }
    }

    enum Operation: Hashable, Sendable { case query, get, set }

    struct Control: Sendable {
        var type: V4L2ControlType = .integer
        var name: String
        var minimum: Int32
        var maximum: Int32
        var step: Int32 = 1
        var defaultValue: Int32
        var flags: V4L2ControlFlags = []
        var value: Int32
        /// Valid items of a menu control.
        var menuItems: Set<Int32> = []
        /// The automatic-mode control that owns this one and the value that releases
        /// it: while the master has another value this control is inactive (and, as on
        /// UVC, refuses to be set with EACCES).
        var master: V4L2ControlID?
        var masterManual: Int32 = 0
    }

    private struct State {
        var controls: [V4L2ControlID: Control]
        var calls: [Call] = []
        var refusals: [Operation: [V4L2ControlID: Int32]] = [:]
    }

    let path: String
    private let state: Mutex<State>

    init(path: String = "/dev/fake-video0", controls: [V4L2ControlID: Control]) {
        self.path = path
        state = Mutex(State(controls: controls))
    }

    // MARK: Test side

    /// Every call so far, in order.
    var calls: [Call] { state.withLock { $0.calls } }
    /// The `set` calls so far.
    var sets: [Call] { calls.filter { if case .set = $0 { true } else { false } } }
    func clearCalls() { state.withLock { $0.calls.removeAll() } }
    /// Makes `operation` on `id` fail with `errno` (still logged).
    func refuse(_ operation: Operation, _ id: V4L2ControlID, errno: Int32) {
        state.withLock { $0.refusals[operation, default: [:]][id] = errno }
    }
    func current(_ id: V4L2ControlID) -> Int32? { state.withLock { $0.controls[id]?.value } }
    /// Changes a control behind the backend's back (as the driver may).
    func update(_ id: V4L2ControlID, _ change: (inout Control) -> Void) {
        state.withLock { change(&$0.controls[id]!) }
    }

    // MARK: V4L2Device

    func queryControl(_ id: V4L2ControlID) throws(V4L2Error) -> V4L2ControlInfo? {
        try state.withLock { s throws(V4L2Error) in
            s.calls.append(.query(id))
            try Self.refusal(s, .query, id, .queryControl, nil, path)
            guard let c = s.controls[id] else { return nil }
            var flags = c.flags
            if Self.ownedByMaster(c, s) { flags.insert(.inactive) }
            return V4L2ControlInfo(id: id, type: c.type, name: c.name, minimum: c.minimum, maximum: c.maximum,
                                   step: c.step, defaultValue: c.defaultValue, flags: flags)
        }
    }

    func hasMenuItem(_ id: V4L2ControlID, index: UInt32) throws(V4L2Error) -> Bool {
        state.withLock { s in
            s.calls.append(.queryMenu(id, index))
            guard let c = s.controls[id], c.type == .menu else { return false }
            return c.menuItems.contains(Int32(index))
        }
    }

    func getControl(_ id: V4L2ControlID) throws(V4L2Error) -> Int32 {
        try state.withLock { s throws(V4L2Error) in
            s.calls.append(.get(id))
            try Self.refusal(s, .get, id, .getControl, nil, path)
            guard let c = s.controls[id], !c.flags.contains(.disabled) else { throw Self.failure(path, .getControl, id, nil, EINVAL) }
            return c.value
        }
    }

    func setControl(_ id: V4L2ControlID, to value: Int32) throws(V4L2Error) {
        try state.withLock { s throws(V4L2Error) in
            s.calls.append(.set(id, value))
            try Self.refusal(s, .set, id, .setControl, value, path)
            guard let c = s.controls[id], !c.flags.contains(.disabled) else { throw Self.failure(path, .setControl, id, value, EINVAL) }
            if c.flags.contains(.readOnly) || Self.ownedByMaster(c, s) { throw Self.failure(path, .setControl, id, value, EACCES) }
            if c.type == .menu {
                guard c.menuItems.contains(value) else { throw Self.failure(path, .setControl, id, value, EINVAL) }
            } else {
                let onStep = (Int64(value) - Int64(c.minimum)) % Int64(max(c.step, 1)) == 0
                guard (c.minimum...c.maximum).contains(value), onStep else { throw Self.failure(path, .setControl, id, value, ERANGE) }
            }
            s.controls[id]!.value = value
        }
    }

    // MARK: Rules

    private static func ownedByMaster(_ c: Control, _ s: State) -> Bool {
        guard let master = c.master, let m = s.controls[master] else { return false }
        return m.value != c.masterManual
    }

    private static func refusal(_ s: State, _ op: Operation, _ id: V4L2ControlID, _ request: V4L2Request,
                                _ value: Int32?, _ path: String) throws(V4L2Error) {
        if let e = s.refusals[op]?[id] { throw failure(path, request, id, value, e) }
    }

    private static func failure(_ path: String, _ request: V4L2Request, _ id: V4L2ControlID,
                                _ value: Int32?, _ errno: Int32) -> V4L2Error {
        .ioctlFailed(path: path, request: request, control: id, value: value, errno: errno)
    }
}
#endif
