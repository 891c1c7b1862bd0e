import Logging
import PoseCastKit
import RTCSession
import SFU
import Signaling
import Synchronization
import Voice

/// An expert's voice through Janus, for one session: publishes the microphone as an
/// audio-only feed in the voice room the publisher named (`voiceRoute`), on the Janus
/// server the session's video comes from, under the name the publisher gave us; one peer
/// connection per try, in the session's pipeline (one clock with the speaker, so the echo
/// canceller pairs what it plays with what the microphone hears). When to publish or
/// try again is `SFUVoicePublication`'s decision. `stop` ends it; `run` returns once every
/// try's peer has left the pipeline.
final class SubscriberSFUVoice: Sendable {
    private let url: String
    private let media: SubscriberMedia
    private let voice: SubscriberVoice
    private let logger: Logger
    private let onNote: @Sendable (SFUVoiceNote) -> Void
    private let events: AsyncStream<SFUVoicePublication.Event>
    private let inlet: AsyncStream<SFUVoicePublication.Event>.Continuation
    /// Whom to hear (the latest route's other talkers) and the current try's hearing of
    /// them, in one lock: a `.hear` that comes while a try is joining is not lost.
    private let hearing = Mutex<(listen: [String], current: Hearing?)>(([], nil))

    init(url: String, media: SubscriberMedia, voice: SubscriberVoice, logger: Logger,
         onNote: @escaping @Sendable (SFUVoiceNote) -> Void) {
        self.url = url
        self.media = media
        self.voice = voice
        self.logger = logger
        self.onNote = onNote
        (events, inlet) = AsyncStream.makeStream()
    }

    /// The publisher's route (again, or a new one).
    func route(_ route: VoiceRoute) { inlet.yield(.route(route)) }

    /// Withdraws the publication; `run` returns once it is gone.
    func stop() { inlet.yield(.stop); inlet.finish() }

    func run() async {
        var machine = SFUVoicePublication(backoff: RetryBackoff(initial: .seconds(1), maximum: .seconds(10)))
        var tries: [Int: Task<Void, Never>] = [:]
        let inlet = self.inlet
        let wakes = WakeTimer()
        wakes.arm { inlet.yield(.tick) }
        for await event in events {
            for effect in machine.handle(event, now: MonotonicClock.nanos()) {
                switch effect {
                case let .publish(attempt, route):
                    hearing.withLock { $0.listen = route.listen }
                    tries[attempt] = Task {
                        let reason = await self.publish(attempt: attempt, route: route) { inlet.yield($0) }
                        if let reason, !Task.isCancelled { inlet.yield(.ended(attempt: attempt, reason: reason)) }
                    }
                case .withdraw(let attempt):
                    tries[attempt]?.cancel()
                case .hear(let names):
                    hearing.withLock { h -> Hearing? in h.listen = names; return h.current }?.listen(names)
                case .emit(let note):
                    onNote(note)
                case .wake(let at):
                    wakes.schedule(at: at)
                }
            }
            if case .stopped = machine.phase { break }
        }
        wakes.stop()
        for (_, attempt) in tries { attempt.cancel() }
        for (_, attempt) in tries { await attempt.value }
    }

    /// One try: a Janus session, joined to the voice room as a publisher under our name,
    /// our offer published; then what the peer and Janus say until it fails (why) or is
    /// withdrawn (nil). Its peer and its Janus session go when it returns.
    private func publish(attempt: Int, route: VoiceRoute,
                         report: @escaping @Sendable (SFUVoicePublication.Event) -> Void) async -> String? {
        let janus: JanusClient
        let handle: JanusHandle
        let feed: UInt64
        let present: [CascadeFeed]
        do throws(JanusError) {
            janus = try await JanusClient.connect(url: url, logger: logger)
        } catch {
            return "\(error)"
        }
        defer { janus.close() }
        do throws(JanusError) {
            handle = try await janus.attach(plugin: JanusVideoRoom.plugin)
            (feed, present) = try await JanusVideoRoom.joinToTalk(room: route.room, display: route.display, pin: route.pin, on: handle)
        } catch {
            return "\(error)"
        }
        let hears = hearing.withLock { h in
            let made = Hearing(listen: h.listen, feeds: present.map { ($0.id, $0.display) })
            h.current = made
            return made
        }
        defer { hearing.withLock { if $0.current === hears { $0.current = nil } } }
        let pipeline = media.pipeline
        var rtc = media.config.rtc
        rtc.linkConditions = nil
        let peer: WebRTCPeer
        do throws(RTCError) { peer = try WebRTCPeer(name: "voiceout-\(attempt)", pipeline: pipeline, configuration: rtc) } catch {
            return "\(error)"
        }
        var send: SubscriberVoice.SFUSend?
        defer {
            peer.leavePipeline()
            if let send { voice.removeSFUSend(send) }
        }
        do throws(RTCError) {
            peer.webrtc.syncStateWithParent()
            send = try voice.addSFUSend(to: peer)
            guard send != nil else { return "no microphone" }
            let offer = try await peer.createOffer()
            try await peer.setLocalDescription(offer)
            let answer: String
            do throws(JanusError) { answer = try await JanusVideoRoom.publish(offer: offer.sdp, on: handle) } catch {
                return "\(error)"
            }
            try await peer.setRemoteDescription(SessionDescription(kind: .answer, sdp: answer))
        } catch {
            return "\(error)"
        }
        report(.published(attempt: attempt, feed: feed))
        return await withTaskGroup(of: String?.self) { group in
            group.addTask {
                await peer.followSFUConnection(trickle: { handle.trickle($0.map { ($0.candidate, $0.mlineIndex) }) }) { check in
                    report(.connected(attempt: attempt, mismatch: check.isVerified ? nil : "\(check)"))
                    return nil
                }
            }
            group.addTask {
                // Janus tells a publisher of the others: the talkers we may hear.
                await handle.ended { data in
                    for other in JanusVideoRoom.feeds(in: data) where other.id != feed { hears.published(other.id, other.display) }
                    for id in JanusVideoRoom.gone(in: data, except: feed) { hears.unpublished(id) }
                }
            }
            group.addTask {
                await self.hear(hears, janus: janus, route: route, attempt: attempt)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// Hears the other talkers for one try: one subscription to all their feeds in the
    /// voice room, made again whenever the set changes (a talker comes or goes), until the
    /// task is cancelled. A subscription that fails is made again at the next change.
    private func hear(_ hears: Hearing, janus: JanusClient, route: VoiceRoute, attempt: Int) async {
        var current: (feeds: [UInt64], peer: WebRTCPeer, handle: JanusHandle)?
        func drop() {
            guard let old = current else { return }
            current = nil
            old.handle.detach()
            old.peer.leavePipeline()
            voice.removeHeard(prefix: old.peer.name + "-")
        }
        var generation = 0
        for await wanted in hears.changes {
            guard wanted != current?.feeds ?? [] else { continue }
            drop()
            guard !wanted.isEmpty else { continue }
            generation += 1
            let name = "voicein-\(attempt)-\(generation)"
            do {
                let (peer, handle) = try await subscribe(to: wanted, name: name, janus: janus, route: route)
                current = (wanted, peer, handle)
                logger.debug("hearing \(wanted.count) other talkers through the SFU", metadata: ["feeds": "\(wanted)"])
            } catch {
                logger.warning("could not hear the other talkers through the SFU: \(error)")
            }
        }
        drop()
    }

    /// One subscription to `feeds` (audio only): each stream into a player of its own.
    private func subscribe(to feeds: [UInt64], name: String, janus: JanusClient,
                           route: VoiceRoute) async throws -> (WebRTCPeer, JanusHandle) {
        let handle = try await janus.attach(plugin: JanusVideoRoom.plugin)
        let offer = SessionDescription(kind: .offer, sdp: try await JanusVideoRoom.subscribe(room: route.room, feeds: feeds, pin: route.pin, on: handle))
        var rtc = media.config.rtc
        rtc.linkConditions = nil
        rtc.jitterBufferLatencyMs = Self.heardLatencyMs
        rtc.receiveThreadNice = VoiceThreadPriority.nice
        let peer = try WebRTCPeer(name: name, pipeline: media.pipeline, configuration: rtc)
        let voice = self.voice
        peer.onIncomingStream { [weak peer] pad in
            let stream = "\(name)-\(pad.name)"
            do throws(RTCError) { try voice.attachHeard(name: stream, pad: pad) } catch { peer?.report(error) }
        }
        peer.webrtc.syncStateWithParent()
        do {
            // One receive transceiver per offered voice, in the offer's order.
            let voices = offer.sdp.components(separatedBy: "\n").filter { $0.hasPrefix("m=audio") }.count
            for _ in 0..<voices { try peer.addReceiveTransceiver(matching: offer, media: "audio", encodings: ["OPUS"]) }
            peer.disableLipSync()
            try await peer.setRemoteDescription(offer)
            let answer = try await peer.createAnswer().settingDTLSRole(.passive)
            try await peer.setLocalDescription(answer)
            Task {
                for await event in peer.events {
                    if case .localCandidate(let c) = event { handle.trickle((c.candidate, c.mlineIndex)) }
                    if case .iceGatheringState(.complete) = event { handle.trickle(nil) }
                }
            }
            try await JanusVideoRoom.start(answer: answer.sdp, on: handle)
        } catch {
            handle.detach()
            peer.leavePipeline()
            throw error
        }
        return (peer, handle)
    }

    /// The jitter buffer of the other talkers' voices: as short as the publisher's for them.
    static let heardLatencyMs = 40
}

/// Whom one try hears: the other talkers' names (the publisher's route), the feeds in the
/// voice room, and the feed ids to subscribe to whenever that changes (`changes`, the
/// latest only).
final class Hearing: Sendable {
    private let state: Mutex<(listen: Set<String>, feeds: [UInt64: String])>
    let changes: AsyncStream<[UInt64]>
    private let inlet: AsyncStream<[UInt64]>.Continuation

    init(listen: [String], feeds: [(UInt64, String)]) {
        state = Mutex((Set(listen), Dictionary(feeds, uniquingKeysWith: { _, last in last })))
        (changes, inlet) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        poke()
    }

    func listen(_ names: [String]) { state.withLock { $0.listen = Set(names) }; poke() }
    func published(_ id: UInt64, _ display: String) { state.withLock { $0.feeds[id] = display }; poke() }
    func unpublished(_ id: UInt64) { state.withLock { $0.feeds[id] = nil }; poke() }

    /// The feeds of the talkers to hear, in order.
    private func poke() {
        inlet.yield(state.withLock { s in s.feeds.filter { s.listen.contains($0.value) }.keys.sorted() })
    }
}
