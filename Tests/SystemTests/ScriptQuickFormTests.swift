import Foundation
import Testing
import TestSupport

/// Every benchmark, `scripts/soak` and `scripts/hostile` in its `--quick` form: the same
/// code path end to end in seconds, on the build the suite runs from. Each must exit
/// 0, print no Python traceback, and print JSON lines holding the keys its header
/// promises; a script that rots (a key renamed in the Swift side, a summary that no longer
/// knows a placement) fails here instead of in front of the next person to run it.
@Suite(.serialized, .tags(.system)) struct ScriptQuickFormTests {
    struct Script: CustomTestStringConvertible, Sendable {
        var name: String
        /// Keys each of which some JSON line must hold.
        var keys: [String]
        /// Seconds the quick form may take.
        var limit: Double = 120
        /// Why it cannot run here, when it cannot.
        var unavailable: @Sendable () -> String? = { nil }
        var testDescription: String { name }
    }

    static let scripts: [Script] = [
        Script(name: "bench-render", keys: ["width", "height", "frames", "ms_p50", "ms_p95", "fps"]),
        Script(name: "bench-tags", keys: ["path", "in_view_with_pose_pct", "poses_without_tag_in_view", "wrong_poses", "error_cm_p95",
                                          "error_deg_p95", "ms_p50"]),
        Script(name: "bench-focus", keys: ["frames_p50", "frames_p95", "taps", "converged", "peak_ratio_min", "process_us_p50"]),
        Script(name: "bench-annotation", keys: ["delay_ms", "taps", "methods", "synced_px_p95", "ground_px_p95", "naive_px_p95",
                                                "synced_cm_p95", "synced_in_front", "naive_over_synced_px_p95"]),
        Script(name: "bench-loopback", keys: ["subscribers", "latency_ms_p50", "latency_ms_p95", "fps_min", "pose_pct",
                                              "pub_cpu_pct", "bitrate_kbps", "baseline_latency_ms_p50"]),
        Script(name: "bench-encoders", keys: ["config", "latency_ms_p50", "encode_ms_p50", "ssim_p50", "pub_cpu_pct"]),
        Script(name: "bench-loss", keys: ["loss_pct", "frames_decoded", "frames_lost", "pose_pct", "wrong_poses", "recovery_ms"]),
        Script(name: "bench-network", keys: ["mode", "t", "link", "sent_kbps", "estimate_kbps", "fps", "pose_pct"]),
        Script(name: "bench-paths", keys: ["scenario", "codec", "met", "fps_mean", "sent_kbps_mean", "longest_freeze_ms",
                                             "own_pose_pct_min", "queueing_cuts", "sessions", "allowed_before_kbps", "target"],
               unavailable: { Self.needsRoot() }),
        Script(name: "bench-effects", keys: ["effect", "size", "cpu_pct", "added_cpu_pct"],
               unavailable: { Self.missing(".build/effects", "the effects' runtime and models (scripts/effects-setup)") }),
        Script(name: "bench-people", keys: ["picture", "size", "meets"],
               unavailable: { Self.missing(".build/effects", "the effects' runtime and models (scripts/effects-setup)") }),
        Script(name: "bench-av", keys: ["run", "publisher_cpu_pct", "pairs", "av_offset_ms_p95", "field_to_expert_ms_p50",
                                          "expert_to_field_ms_p50"]),
        Script(name: "bench-window", keys: ["display", "latency_ms_p50", "latency_ms_p95", "frames_shown", "p95_difference_ms"],
               unavailable: { Self.missing("/usr/bin/Xvfb", "Xvfb (scripts/setup installs it)") }),
        Script(name: "bench-window-cpu", keys: ["way", "subscriber_cpu_pct", "xvfb_cpu_pct", "fps", "window_over_headless_pct"],
               unavailable: { Self.missing("/usr/bin/Xvfb", "Xvfb (scripts/setup installs it)")
                   ?? Self.missing("/usr/bin/openbox", "openbox (scripts/setup installs it)") }),
        Script(name: "bench-trailer", keys: ["measure", "extension", "publisher", "subscriber", "summary"],
               unavailable: { Self.missing("/usr/bin/chromium", "Chromium (scripts/setup installs it)")
                   ?? (AiortcPython.path == nil ? "no Python with websockets (scripts/interop-setup)" : nil) }),
        Script(name: "bench-chromium-load", keys: ["mode", "burners", "load_after", "estimate_kbps_median", "chromium_fps_mean",
                                                   "sizes", "transport_feedback", "met"],
               unavailable: { Self.missing("/usr/bin/chromium", "Chromium (scripts/setup installs it)")
                   ?? (AiortcPython.path == nil ? "no Python with websockets (scripts/interop-setup)" : nil) }),
        Script(name: "bench-sfu", keys: ["path", "subscribers", "publisher_cpu_pct", "publisher_upload_kbps", "janus_cpu_pct",
                                           "fps_min", "latency_ms_p95", "own_pose_pct"],
               unavailable: { Self.missing("/usr/bin/janus", "janus (scripts/setup installs it)") ?? Self.needsRoot() }),
        Script(name: "soak", keys: ["minutes", "samples", "rss_growth_pct", "fd_growth", "frames", "pose_pct", "leak_judged"]),
        Script(name: "hostile", keys: ["case", "codec", "ok", "expected", "observed", "honest"],
               unavailable: { AiortcPython.path == nil ? "no Python with aiortc and websockets (scripts/interop-setup)" : nil }),
    ]

    static func missing(_ path: String, _ what: String) -> String? {
        let full = path.hasPrefix("/") ? path : AiortcPython.packageRoot.appendingPathComponent(path).path
        return FileManager.default.fileExists(atPath: full) ? nil : "\(what) missing: \(full)"
    }

    static func needsRoot() -> String? { getuid() == 0 ? nil : "network namespaces need root" }

    /// POSECAST_QUICK_FORMS=NAME[,NAME]: only these scripts (all when unset).
    static let chosen = ProcessInfo.processInfo.environment["POSECAST_QUICK_FORMS"]?.split(separator: ",").map(String.init)

    @Test("the quick form runs and prints its JSON", arguments: scripts)
    func quickForm(_ script: Script) async throws {
        if let chosen = Self.chosen, !chosen.contains(script.name) { return }
        if let reason = script.unavailable() {
            print("ScriptQuickFormTests: \(script.name) skipped: \(reason)")
            return
        }
        let path = AiortcPython.packageRoot.appendingPathComponent("scripts/\(script.name)").path
        let started = Date()
        // The script starts with an empty signal mask, as from a shell: a child spawned
        // from the runner's Dispatch threads inherits their blocked signals, and an Xvfb
        // started under it outlived its SIGTERM.
        let unblocked = "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv(sys.argv[1], sys.argv[1:])"
        let run = try await ManagedProcess.run("/usr/bin/env", ["python3", "-c", unblocked, "/bin/bash", path, "--quick", "--no-build"],
                                               timeout: script.limit)
        let seconds = Date().timeIntervalSince(started)
        print("ScriptQuickFormTests: \(script.name) --quick took \(String(format: "%.1f", seconds)) s")
        let context = "scripts/\(script.name) --quick (exit \(run.status), \(Int(seconds)) s); stderr:\n\(run.stderrTail)"
        #expect(run.status == 0, "\(context)")
        for text in [run.stdout, run.stderr] {
            #expect(!text.contains("Traceback (most recent call last)"), "a Python traceback: \(context)")
        }
        let objects = run.stdout.split(separator: "\n").compactMap { line -> [String: Any]? in
            guard line.first == "{" else { return nil }
            return try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }
        #expect(!objects.isEmpty, "no JSON line on stdout: \(context)\nstdout:\n\(run.stdout.suffix(2000))")
        // A key counts where some line gives it a value (null is what a broken join prints).
        let missing = script.keys.filter { key in !objects.contains { $0[key] != nil && !($0[key] is NSNull) } }
        #expect(missing.isEmpty, "no JSON line gives \(missing) a value: \(context)\nstdout:\n\(run.stdout.suffix(2000))")
    }
}
