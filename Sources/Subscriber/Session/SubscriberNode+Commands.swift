import Dispatch
import Logging
import PoseCastKit
import PoseMedia
import RTCSession
import SFU
import Signaling
import Synchronization

/// What the expert asks of the publisher: mute, control requests, taps (on the frame on
/// screen, or at a known world point for tests), and the replies they wait for.
extension SubscriberNode {
    /// Mutes or unmutes our microphone (its stream goes on as silence) and tells the
    /// publisher, which tells everyone (`voices`). Kept for the next session too.
    public func setMuted(_ muted: Bool) throws(ControlError) {
        let voice = state.withLock { s -> SubscriberVoice? in s.muted = muted; return s.media?.voice }
        guard let voice, voice.capture != nil else {
            throw ControlError(id: nil, code: .unsupported, message: "no microphone: nothing to mute")
        }
        voice.setMuted(muted)
        if isConnected { _ = try send(.voice(muted: muted)) }
    }

    /// The expert's voice now (nil without voice), and the conversation as last listed.
    public var voice: SubscriberVoice? { state.withLock { $0.media?.voice } }
    public var voices: [VoiceParticipant] { state.withLock { $0.voices } }

    /// The pose of the newest decoded frame (the one on screen headless).
    public var frameOnScreen: FramePose? { frames.withLock { $0.lastFrame?.pose } }

    /// Sends a control request; returns its id. `beforeSending` gets the id before the
    /// request leaves: on loopback the reply can come back before `send` returns, so
    /// whatever must know the id when the reply arrives is recorded there.
    @discardableResult
    public func send(_ request: ControlRequest, beforeSending: ((String) -> Void)? = nil) throws(ControlError) -> String {
        let (channel, number, unavailable, connected) = state.withLock { s -> (DataChannel?, Int, String, Bool) in
            s.requestNumber += 1
            return (s.channel, s.requestNumber, s.session.controlUnavailableReason, s.session.connected)
        }
        let id = "r\(number)"
        guard connected else {
            throw ControlError(id: id, code: .unsupported, message: "no control channel: \(unavailable)")
        }
        let text = ControlCodec.encode(ControlEnvelope(id: id, request: request))
        // Where it goes: through an SFU, over signaling to the publisher's session for us;
        // else on the control channel. Each returns why it could not be sent, or nil.
        let transmit: () -> String?
        if viaSFU {
            guard case .active(let sessionId, _) = state.withLock({ $0.session.phase }) else {
                throw ControlError(id: id, code: .unsupported, message: "no control channel: \(unavailable)")
            }
            transmit = { [link] in
                do throws(SignalingClientError) {
                    try link.send(.peer(PeerMessage(sessionId: sessionId, payload: .control(text))))
                    return nil
                } catch {
                    return "control over signaling: \(error)"
                }
            }
        } else {
            guard let channel, channel.readyState == .open else {
                let why = channel.map { "the control channel is \($0.readyState)" } ?? unavailable
                throw ControlError(id: id, code: .unsupported, message: "no control channel: \(why)")
            }
            transmit = { [delayedSender] in
                if let delayedSender {
                    delayedSender.send(text, on: channel)
                    return nil
                }
                do throws(RTCError) { try channel.send(text) } catch { return "control channel: \(error)" }
                return nil
            }
        }
        if case .annotate = request { state.withLock { _ = $0.annotateRequests.insert(id) } }
        beforeSending?(id)
        if let failure = transmit() {
            state.withLock { _ = $0.annotateRequests.remove(id) }
            tracker.acknowledged(request: id, annotationId: nil)
            throw ControlError(id: id, code: .unsupported, message: failure)
        }
        onEvent(.requestSent(id: id, type: request.type, text: text))
        _ = step(.requestSent(id: id, type: request.type))
        return id
    }

    /// A tap on the frame on screen → `annotate` at the world point it designates,
    /// (`shown`: that frame's pose, when the window knows which frame it drew),
    /// from that frame's own pose and the configured placement. `naive` sends screen
    /// coordinates only, for the publisher to place with whatever pose it has when
    /// they arrive (the baseline the annotation benchmark measures).
    @discardableResult
    public func tap(at point: NormalizedPoint, kind: AnnotationKind = .pin, label: String = "",
                    color: String = "#FF3B30", naive: Bool = false, shown: FramePose? = nil) throws(ControlError) -> String {
        guard point.isInImage else {
            throw ControlError(id: nil, code: .invalidValue, message: "tap (\(point.x), \(point.y)) is outside the image: x and y must be in 0…1")
        }
        guard let frame = frames.withLock({ $0.lastFrame }) else {
            throw ControlError(id: nil, code: .unsupported, message: "no frame on screen yet")
        }
        // The window says which frame it showed; otherwise the newest decoded one is on screen.
        guard let pose = shown ?? frame.pose, !pose.flags.contains(.missing) else {
            if naive {
                // Screen coordinates need no pose of ours: the publisher places them with
                // its own at arrival (frame id 0: there is none to name).
                return try send(.annotate(AnnotationRequest(kind: kind, placement: .screen, position: nil, frameId: frame.pose?.frameID ?? 0,
                                                            tap: point, label: label, color: color)))
            }
            let noPose = state.withLock { $0.session.publisherSendsNoPose }
            throw ControlError(id: nil, code: .unsupported, message: noPose
                ? "this publisher sends no pose with its frames: a tap cannot be placed in the world; `tapnaive` sends screen coordinates"
                : "the frame on screen carries no usable pose; tap again")
        }
        return try send(.annotate(try annotateRequest(point, on: pose, kind: kind, label: label, color: color, naive: naive)))
    }

    /// `placement`: this tap's own, in place of the configured one.
    private func annotateRequest(_ point: NormalizedPoint, on pose: FramePose, kind: AnnotationKind, label: String,
                                 color: String, naive: Bool, placement: PlacementMode? = nil) throws(ControlError) -> AnnotationRequest {
        if naive {
            return AnnotationRequest(kind: kind, placement: .screen, position: nil, frameId: pose.frameID, tap: point, label: label, color: color)
        }
        let placement = placement ?? config.placement
        if placement == .auto {
            // The ground point goes along for a publisher without depth; none when the tap's
            // ray misses the ground (the publisher says so if it has no depth either).
            let ground = try? PlacementMode.groundPlane.place(point, on: pose)
            return AnnotationRequest(kind: kind, placement: .auto, position: ground, frameId: pose.frameID, tap: point,
                                     label: label, color: color)
        }
        if placement == .publisherDepth {
            return AnnotationRequest(kind: kind, placement: .publisherDepth, position: nil, frameId: pose.frameID, tap: point,
                                     label: label, color: color)
        }
        do throws(PlacementError) {
            let position = try placement.place(point, on: pose)
            return AnnotationRequest(kind: kind, position: position, frameId: pose.frameID, tap: point, label: label, color: color)
        } catch {
            throw ControlError(id: nil, code: .invalidValue, message: "tap (\(point.x), \(point.y)) on frame \(pose.frameID): \(error)")
        }
    }

    /// Taps where a known world point appears on the frame on screen, and reports how
    /// far from it the annotation lands once the publisher has placed it (`.placement`
    /// events): the annotation benchmark's expert, whose tap lands on the centre of the
    /// pixel the point falls in (as a click does).
    @discardableResult
    public func tap(world truth: Vector3, kind: AnnotationKind = .pin, label: String = "", color: String = "#FF3B30",
                    method: TapMethod = .configured) throws(ControlError) -> String {
        guard let frame = frames.withLock({ $0.lastFrame }), let pose = frame.pose, let camera = CameraModel(pose: pose) else {
            throw ControlError(id: nil, code: .unsupported, message: "no frame with a usable pose on screen yet")
        }
        guard let projection = camera.project(truth), projection.isInImage else {
            throw ControlError(id: nil, code: .invalidValue,
                               message: "world point (\(truth.x), \(truth.y), \(truth.z)) is not in view on frame \(pose.frameID)")
        }
        var tap = projection.point
        if frame.width > 0, frame.height > 0 {
            let w = Float(frame.width), h = Float(frame.height)
            tap = NormalizedPoint(x: min(((tap.x * w).rounded(.down) + 0.5) / w, 1), y: min(((tap.y * h).rounded(.down) + 0.5) / h, 1))
        }
        let request = try annotateRequest(tap, on: pose, kind: kind, label: label, color: color, naive: method == .naive,
                                          placement: method == .ground ? .groundPlane : nil)
        let id = try send(.annotate(request)) { [tracker] id in
            tracker.expect(request: id, truth: truth, placement: request.placement, frameId: pose.frameID)
        }
        return id
    }

    func track(_ reply: ControlReply) {
        switch reply {
        case let .ack(id, annotationId, _):
            tracker.acknowledged(request: id, annotationId: annotationId)
            let placed = state.withLock { s -> Annotation? in
                guard s.annotateRequests.remove(id) != nil, let annotationId else { return nil }
                s.ownAnnotations.append(annotationId)
                return s.newlyPlaced().first
            }
            if let placed { onEvent(.annotationPlaced(placed)) }
        case .error(let error):
            if let id = error.id {
                tracker.acknowledged(request: id, annotationId: nil)
                _ = state.withLock { $0.annotateRequests.remove(id) }
            }
        case .sceneStatus(let status):
            state.withLock { $0.sceneStatus = status }
        case .voices(let list):
            state.withLock { $0.voices = list }
        case .voiceRoute, .annotationVisibility:
            break
        case .annotations(let list):
            let present = Set(list.map(\.id))
            let placed = state.withLock { s -> [Annotation] in
                s.ownAnnotations.removeAll { !present.contains($0) }
                // Only ids still shown need remembering (the set would grow for ever).
                s.reportedPlacements.formIntersection(present)
                s.lastAnnotations = list
                return s.newlyPlaced()
            }
            for annotation in placed { onEvent(.annotationPlaced(annotation)) }
            let later = frames.withLock { $0.lastFrame }
            for report in tracker.evaluate(list, later: later?.pose, width: later?.width ?? 0, height: later?.height ?? 0) {
                onEvent(.placement(report))
            }
        }
    }
}
