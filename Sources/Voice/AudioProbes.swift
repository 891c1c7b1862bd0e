package import CGStreamer
import CGstShim
import RTCSession
import PoseCastKit
import Synchronization

/// The probes on raw voice (S16LE 48 kHz mono, `VoiceFormat`): tone bursts made on the
/// capture side, tones and levels measured on the playing side.
package enum AudioProbes {
    private static let dataMask = GST_PAD_PROBE_TYPE_BUFFER

    /// Runs `body` on the buffer's samples (S16LE, `VoiceFormat`), mapped for reading;
    /// nothing when it cannot be mapped.
    package static func withSamples(_ buffer: UnsafeMutablePointer<GstBuffer>, _ body: (UnsafeBufferPointer<Int16>) -> Void) {
        mapped(buffer, flags: GST_MAP_READ) { body(UnsafeBufferPointer($0)) }
    }

    /// Runs `body` on the buffer's samples mapped for writing (the buffer must be
    /// writable: `ProbeInfo.writableBuffer`); nothing when it cannot be mapped.
    package static func withMutableSamples(_ buffer: UnsafeMutablePointer<GstBuffer>,
                                           _ body: (UnsafeMutableBufferPointer<Int16>) -> Void) {
        mapped(buffer, flags: GstMapFlags(GST_MAP_READ.rawValue | GST_MAP_WRITE.rawValue), body)
    }

    private static func mapped(_ buffer: UnsafeMutablePointer<GstBuffer>, flags: GstMapFlags,
                               _ body: (UnsafeMutableBufferPointer<Int16>) -> Void) {
        var map = GstMapInfo()
        guard gst_buffer_map(buffer, &map, flags) != 0, let data = map.data else { return }
        defer { gst_buffer_unmap(buffer, &map) }
        body(UnsafeMutableBufferPointer(start: UnsafeMutableRawPointer(data).assumingMemoryBound(to: Int16.self), count: Int(map.size) / 2))
    }

    /// Monotonic (the GStreamer system clock's) to wall-clock nanoseconds, now.
    static func wall(fromMonotonic mono: UInt64) -> UInt64 {
        WallClock.nowNanos() &+ (mono &- MonotonicClock.nanos())
    }

    /// Makes the buffer's samples 0 outside 100 ms bursts that start at every whole second
    /// of the wall clock: the field's test voice, paired with the synthetic camera's flash
    /// frame (`SyntheticSource`'s flash) captured at the same instant. Each sample's instant
    /// is its buffer's running time plus the base time (the system clock is monotonic),
    /// as a live audio source timestamps what it captures.
    package static func installBursts(on pad: Pad, burstNanos: UInt64 = 100_000_000) {
        pad.addProbeWithPad(dataMask) { rawPad, info in
            guard let buffer = ProbeInfo.writableBuffer(info) else { return GST_PAD_PROBE_OK }
            let pts = UInt64(buffer.pointee.pts)
            guard pts != UInt64.max else { return GST_PAD_PROBE_OK }
            let start = wall(fromMonotonic: BufferTime.baseTime(rawPad) &+ BufferTime.runningTime(rawPad, pts: pts))
            withMutableSamples(buffer) { samples in
                for i in samples.indices {
                    let t = start &+ UInt64(i) * 1_000_000_000 / UInt64(VoiceFormat.rate)
                    if t % 1_000_000_000 >= burstNanos { samples[i] = 0 }
                }
            }
            return GST_PAD_PROBE_OK
        }
    }

    /// Measures each buffer's level, and finds tones in it when `tracker` is given. A
    /// change is reported with the wall-clock instant its block is played: the sample's
    /// running time plus the base time plus `playDelay()` (the sink's latency for a
    /// synchronised sink).
    package static func installMeter(on pad: Pad, level: VoiceLevel, tones: ToneProbe?) {
        pad.addProbeWithPad(dataMask) { rawPad, info in
            guard let buffer = gst_pad_probe_info_get_buffer(info) else { return GST_PAD_PROBE_OK }
            withSamples(buffer) { samples in
                level.measure(samples, nowNanos: MonotonicClock.nanos())
                guard let tones else { return }
                let pts = UInt64(buffer.pointee.pts)
                // When a synchronised sink plays it, or now if that is already past (a
                // sample that comes late is heard late, not when it was due).
                let now = MonotonicClock.nanos()
                let due = pts == UInt64.max ? now : BufferTime.baseTime(rawPad) &+ BufferTime.runningTime(rawPad, pts: pts) &+ tones.playDelay()
                tones.feed(samples, startNanos: wall(fromMonotonic: max(due, now)), lateNanos: now > due ? now - due : 0)
            }
            return GST_PAD_PROBE_OK
        }
    }

    /// Makes a received voice enter a mixer as if it had no latency, `slack` after it
    /// arrives. An audiomixer holds every output until its slowest input's latency has
    /// passed: a voice from the network (its jitter buffer's latency) would hold the
    /// field's own voice back as long on its way to every expert, and lip sync with it.
    /// Re-timed from its arrival instead (`PlayoutRetimer`: its own timeline kept, moved
    /// later with more slack should a buffer come late), it is seldom late at the mixer,
    /// and only it waits. Its jitter buffer's timestamps alone would not do: they start
    /// from whenever the session began, and a voice that starts out late would be dropped
    /// by the mixer for good.
    ///
    /// `queue`: the one in front of the mixer's pad. The latency is hidden on its source
    /// pad, the buffers re-timed on its sink pad, as they arrive. (Measured on the source pad,
    /// "arrival" would be when the mixer took the previous buffer, at its due time or after:
    /// every buffer would look late, the voice would move later and later, and the queue,
    /// full, would drop most of it.)
    /// `pauses`: the voice's sender pauses, seen before its decoder (a buffer late because
    /// the sender paused does not grow the slack). `level`: the voice's meter, which has
    /// measured each buffer upstream on the same thread before it gets here; a buffer under
    /// `quietDB` may be cut to take back delay. Returns the re-timing, for the status line.
    package static func hideLatency(queue: Element, slackNanos: UInt64, maxSlackNanos: UInt64,
                                    pauses: SenderPauses, level: VoiceLevel, quietDB: Double = -45) -> PlayoutTiming {
        // Two probes: a mask naming a scheduling type (PULL, for the answered query) only
        // matches data in that mode, and buffers are pushed.
        queue.staticPad("src")!.addProbeWithPad(GstPadProbeType(GST_PAD_PROBE_TYPE_QUERY_UPSTREAM.rawValue | GST_PAD_PROBE_TYPE_PULL.rawValue)) { _, info in
            // After the query was answered upstream (the PULL half): report none.
            if let query = gst_pad_probe_info_get_query(info), query.pointee.type == GST_QUERY_LATENCY {
                gst_query_set_latency(query, 1, 0, GstClockTime.max)
            }
            return GST_PAD_PROBE_OK
        }
        let timing = PlayoutTiming(PlayoutRetimer(slackNanos: Int64(slackNanos), maxSlackNanos: Int64(maxSlackNanos)))
        queue.staticPad("sink")!.addProbeWithPad(GST_PAD_PROBE_TYPE_BUFFER) { rawPad, info in
            guard let buffer = ProbeInfo.writableBuffer(info), buffer.pointee.pts != GstClockTime.max,
                  let parent = gst_pad_get_parent_element(rawPad) else { return GST_PAD_PROBE_OK }
            let now = gst_element_get_current_running_time(parent)
            gst_object_unref(UnsafeMutableRawPointer(parent))
            guard now != GstClockTime.max else { return GST_PAD_PROBE_OK }
            // In running time, the mixer's (the stream's segment need not start at 0); the
            // timestamp then moves by as much.
            let running = Int64(BufferTime.runningTime(rawPad, pts: UInt64(buffer.pointee.pts)))
            let quiet = level.lastBufferDecibels < quietDB
            let (due, moved) = timing.retimer.withLock { r in
                let moves = r.moves
                let duration = buffer.pointee.duration == GstClockTime.max ? 0 : Int64(buffer.pointee.duration)
                return (r.due(pts: running, arrived: Int64(now), durationNanos: duration, afterPause: pauses.lastFollowedPause,
                              quiet: quiet), r.moves != moves)
            }
            // Said, or the mixer would take the move for drift and keep placing the voice
            // where it expected it (too early, so clipped) for its discont-wait (1 s).
            if moved { buffer.pointee.mini_object.flags |= GST_BUFFER_FLAG_DISCONT.rawValue }
            buffer.pointee.pts = GstClockTime(max(Int64(buffer.pointee.pts) + due - running, 0))
            return GST_PAD_PROBE_OK
        }
        return timing
    }

    /// Plays each buffer `delayNanos` after its running time, whatever the pipeline's
    /// latency: its timestamp moves earlier by what the pipeline added for its slowest
    /// branch (the video's decoder and jitter buffer, hundreds of ms) that this voice does
    /// not need. Received audio's running time is its arrival (the jitter buffer stamps it
    /// so), so the voice plays `delayNanos` after it arrives, like the video, which is
    /// shown as soon as it is decoded. The sink's latency is read for every buffer (one
    /// locked read): when the video's jitter buffer grows, the voice follows at once (read
    /// twice a second instead, a pair measured in that half second was 57 ms late). The
    /// timestamps move before the echo probe, not at the sink (`ts-offset`): the
    /// canceller takes each played frame's instant as its running time plus the latency,
    /// and must see the true one.
    static func playSoon(on pad: Pad, sink: Element, delayNanos: UInt64) {
        // The base sink (autoaudiosink's child exists once it is running): found at the first buffer.
        let found = Mutex<UInt?>(nil)
        pad.addProbe(GST_PAD_PROBE_TYPE_BUFFER) { info in
            let address = found.withLock { a -> UInt? in
                if a == nil, let base = VoiceDevices.baseSink(in: sink) { a = UInt(bitPattern: base) }
                return a
            }
            guard let address, let base = UnsafeMutablePointer<GstBaseSink>(bitPattern: address),
                  let buffer = ProbeInfo.writableBuffer(info), buffer.pointee.pts != GstClockTime.max else { return GST_PAD_PROBE_OK }
            let latency = UInt64(gst_base_sink_get_latency(base))
            let shift = GstClockTime(latency > delayNanos ? latency - delayNanos : 0)
            buffer.pointee.pts = buffer.pointee.pts > shift ? buffer.pointee.pts - shift : 0
            return GST_PAD_PROBE_OK
        }
    }

    /// Drops end-of-stream (a WAV microphone that has played out): the voice goes on as
    /// silence, the peers' streams stay open.
    package static func dropEndOfStream(on pad: Pad) {
        pad.addProbe(GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) { info in
            guard let event = gst_pad_probe_info_get_event(info), event.pointee.type == GST_EVENT_EOS else { return GST_PAD_PROBE_OK }
            return GST_PAD_PROBE_DROP
        }
    }
}

/// A `ToneTracker` on a streaming thread, reporting each change.
package final class ToneProbe: Sendable {
    private let tracker: Mutex<ToneTracker>
    private let report: @Sendable (ToneChange) -> Void
    /// Nanoseconds between a sample passing the probe's running time and its being heard.
    let playDelay: @Sendable () -> UInt64

    package init(frequencies: [Double], thresholdDB: Double, playDelay: @escaping @Sendable () -> UInt64,
                 report: @escaping @Sendable (ToneChange) -> Void) {
        tracker = Mutex(ToneTracker(frequencies: frequencies, thresholdDB: thresholdDB))
        self.playDelay = playDelay
        self.report = report
    }

    func feed(_ samples: UnsafeBufferPointer<Int16>, startNanos: UInt64, lateNanos: UInt64) {
        let changes = tracker.withLock { $0.feed(samples, startNanos: startNanos) }
        for var change in changes {
            change.playDelayNanos = playDelay()
            change.lateNanos = lateNanos
            report(change)
        }
    }
}
