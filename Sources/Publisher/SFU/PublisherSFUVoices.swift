import Foundation
import Logging
import PoseCastKit
import RTCSession
import SFU
import Signaling
import Synchronization
import Voice

/// The experts' voices through Janus, as the publisher hears them: it makes the voice room
/// (a pin of its own, `JanusVideoRoom.VoiceRoomSpec`) and watches it from a Janus session
/// of its own, tells each talking session through the SFU its route, and subscribes to the
/// feed of each, one peer connection per voice in the publisher's pipeline, whose audio
/// goes to the field's speaker and to every expert connected directly
/// (`PublisherVoice.attachRelayedVoice`). What to do is `SFUVoices`' decision; every task
/// started here ends before `run` returns.
public final class PublisherSFUVoices: Sendable {
    private let url: String
    private let room: UInt64
    private let node: PublisherNode
    private let voice: PublisherVoice
    private let logger: Logger
    private let onEvent: @Sendable (PublisherSFUVoiceEvent) -> Void
    /// The Janus session the room is watched from; subscriptions attach their handles to it.
    private let client = Mutex<JanusClient?>(nil)
    /// Pause before watching the room again after losing it, doubling to 10 s.
    static let reconnect = RetryBackoff(initial: .seconds(1), maximum: .seconds(10))

    public init(url: String, room: UInt64, node: PublisherNode, voice: PublisherVoice, logger: Logger,
                onEvent: @escaping @Sendable (PublisherSFUVoiceEvent) -> Void) {
        self.url = url
        self.room = room
        self.node = node
        self.voice = voice
        self.logger = logger
        self.onEvent = onEvent
    }

    /// An unguessable word (a pin, a talker's name): 128 random bits in hex.
    static func randomWord() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(generator.next() as UInt64, radix: 16) }.joined(separator: "-")
    }

    /// Runs until the calling task is cancelled.
    public func run() async {
        var machine = SFUVoices(room: room, backoff: RetryBackoff(initial: .seconds(1), maximum: .seconds(10)),
                                names: { Self.randomWord() })
        let (events, inlet) = AsyncStream.makeStream(of: SFUVoices.Event.self)
        var listeners: [Int: Task<Void, Never>] = [:]
        let wakes = WakeTimer()
        wakes.arm { inlet.yield(.tick) }
        func carry(_ effects: [SFUVoices.Effect]) {
            for effect in effects {
                switch effect {
                case let .tell(sessionId, route):
                    node.sendVoiceRoute(route, to: sessionId)
                case let .subscribe(attempt, sessionId, feed, pin):
                    listeners[attempt] = Task {
                        let reason = await self.listen(attempt: attempt, feed: feed, pin: pin, report: { inlet.yield($0) })
                        if let reason, !Task.isCancelled { inlet.yield(.subscriptionFailed(attempt: attempt, reason: reason)) }
                    }
                    logger.debug("subscribing to the voice of \(sessionId)", metadata: ["feed": "\(feed)"])
                case .unsubscribe(let attempt):
                    listeners.removeValue(forKey: attempt)?.cancel()
                case .emit(let event):
                    onEvent(event)
                case .wake(let at):
                    wakes.schedule(at: at)
                }
            }
        }
        node.watchSFUTalkers { inlet.yield(.talkers($0)) }
        let keeper = Task { await self.keepRoom(report: { inlet.yield($0) }) }
        await withTaskCancellationHandler {
            for await event in events { carry(machine.handle(event, now: MonotonicClock.nanos())) }
        } onCancel: {
            inlet.finish()
        }
        node.watchSFUTalkers(nil)
        wakes.stop()
        keeper.cancel()
        client.withLock { $0 }?.close()
        for (_, listener) in listeners { listener.cancel() }
        for (_, listener) in listeners { await listener.value }
        await keeper.value
    }

    /// Keeps the voice room made and watched, again after every loss.
    private func keepRoom(report: @escaping @Sendable (SFUVoices.Event) -> Void) async {
        var failures = 0
        while !Task.isCancelled {
            let (reason, opened) = await watchRoomOnce(report: report)
            client.withLock { $0 = nil }
            guard !Task.isCancelled else { return }
            if opened { report(.roomLost(reason: reason)) }
            logger.info("voice room lost", metadata: ["reason": "\(reason)"])
            failures = opened ? 1 : failures + 1
            try? await Task.sleep(for: Self.reconnect.delay(afterRefusals: failures))
        }
    }

    /// One connection: make the room with a new pin, join it without publishing, and
    /// report its feeds until it ends. Why it ended, and whether the room was opened.
    private func watchRoomOnce(report: @escaping @Sendable (SFUVoices.Event) -> Void) async -> (String, Bool) {
        let janus: JanusClient
        do throws(JanusError) { janus = try await JanusClient.connect(url: url, logger: logger) } catch {
            return ("\(error)", false)
        }
        defer { janus.close() }
        do throws(JanusError) {
            let handle = try await janus.attach(plugin: JanusVideoRoom.plugin)
            let spec = JanusVideoRoom.VoiceRoomSpec(room: room, pin: Self.randomWord())
            try await JanusVideoRoom.makeVoiceRoom(spec, on: handle)
            let (me, present) = try await JanusVideoRoom.watchVoices(spec, display: "posecast-publisher", on: handle)
            client.withLock { $0 = janus }
            report(.roomOpened(pin: spec.pin, feeds: present.map { SFUVoices.Feed(id: $0.id, display: $0.display) }))
            for await event in handle.events {
                guard let data = event.pluginData else {
                    if event.verb == "detached" { return ("Janus detached our handle", true) }
                    continue
                }
                if data["videoroom"]?.stringValue == "destroyed" { return ("the voice room was destroyed", true) }
                for feed in JanusVideoRoom.feeds(in: data) where feed.id != me {
                    report(.published(SFUVoices.Feed(id: feed.id, display: feed.display)))
                }
                for id in JanusVideoRoom.gone(in: data, except: me) { report(.unpublished(feed: id)) }
            }
            return (Task.isCancelled ? "stopped" : "the connection to Janus closed", true)
        } catch {
            return ("\(error)", client.withLock { $0 != nil })
        }
    }

    /// One subscription to a talker's feed, until it fails (why) or the task is cancelled
    /// (nil); its peer and its Janus handle go when it returns.
    private func listen(attempt: Int, feed: UInt64, pin: String,
                        report: @escaping @Sendable (SFUVoices.Event) -> Void) async -> String? {
        guard let janus = client.withLock({ $0 }) else { return "no connection to Janus" }
        let handle: JanusHandle
        let offer: SessionDescription
        do throws(JanusError) {
            handle = try await janus.attach(plugin: JanusVideoRoom.plugin)
            offer = SessionDescription(kind: .offer, sdp: try await JanusVideoRoom.subscribe(room: room, feed: feed, pin: pin, on: handle))
        } catch {
            return "\(error)"
        }
        defer { handle.detach() }
        let media = node.media
        let name = "sfuvoice-\(attempt)"
        var rtc = media.config.rtc
        rtc.linkConditions = nil
        rtc.jitterBufferLatencyMs = PublisherVoice.receiveLatencyMs
        rtc.receiveThreadNice = VoiceThreadPriority.nice
        let peer: WebRTCPeer
        do throws(RTCError) { peer = try WebRTCPeer(name: name, pipeline: media.pipeline, configuration: rtc) } catch {
            return "\(error)"
        }
        let voice = self.voice
        defer {
            peer.leavePipeline()
            voice.removeRelayedVoice(name: name)
        }
        peer.onIncomingStream { [weak peer] pad in
            do throws(RTCError) { try voice.attachRelayedVoice(name: name, pad: pad) } catch { peer?.report(error) }
        }
        peer.webrtc.syncStateWithParent()
        do throws(RTCError) {
            try peer.addReceiveTransceiver(matching: offer, media: "audio", encodings: ["OPUS"])
            peer.disableLipSync()
            try await peer.setRemoteDescription(offer)
            // Janus starts the DTLS handshake (see `SubscriberMedia.answer`).
            let answer = try await peer.createAnswer().settingDTLSRole(.passive)
            try await peer.setLocalDescription(answer)
            do throws(JanusError) { try await JanusVideoRoom.start(answer: answer.sdp, on: handle) } catch {
                return "\(error)"
            }
        } catch {
            return "\(error)"
        }
        return await withTaskGroup(of: String?.self) { group in
            group.addTask {
                await peer.followSFUConnection(trickle: { handle.trickle($0.map { ($0.candidate, $0.mlineIndex) }) }) { check in
                    guard check.isVerified else { return "Janus's DTLS certificate does not match its offer (\(check))" }
                    report(.subscribed(attempt: attempt))
                    return nil
                }
            }
            group.addTask { await handle.ended() }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
