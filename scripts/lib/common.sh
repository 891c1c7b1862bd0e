# What the scripts under scripts/ share in bash; each sources it after it cds to the
# package root:  . scripts/lib/common.sh
# Their Python halves are the .py files next to this one (paths.py has the paths below).

# One build for everything: the release configuration, compiled for testing (the test
# suites' `@testable import` needs it), so that the demo, the benchmarks and the test
# suites share one set of products and never rebuild each other's. The tests run
# optimised code: the synthetic camera, the effects and metering render real-time video.
POSECAST_BUILD_FLAGS=(-c release -Xswiftc -enable-testing)
# Where SwiftPM puts the products and the test bundle.
POSECAST_RELEASE_BIN=.build/release
POSECAST_TEST_BUNDLE=$POSECAST_RELEASE_BIN/PoseCastPackageTests.xctest
# The three processes of a call (signaling, publisher, subscribers).
POSECAST_PROCESSES=(posecast-signaling posecast-publisher posecast-subscriber)

# The comment block under the shebang of SCRIPT, without its "# ": the script's --help.
posecast_help() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$1"; }

# stdin to stdout without SwiftPM's "prohibited" linker notes (noise here).
posecast_filter_build_noise() { grep -v prohibited || true; }

# swift build ARGS…, its output filtered and on stderr (the scripts' stdout is their
# JSON lines); fails when the build fails.
posecast_swift_build() { swift build "$@" 2>&1 | posecast_filter_build_noise >&2; }

# Release build of each PRODUCT, one at a time (default: the three processes).
posecast_build_release() {
  local product products=("$@")
  [ $# -gt 0 ] || products=("${POSECAST_PROCESSES[@]}")
  for product in "${products[@]}"; do
    posecast_swift_build "${POSECAST_BUILD_FLAGS[@]}" --product "$product"
  done
}

# The products and the test bundle (what `scripts/test` runs).
posecast_build_tests() { posecast_swift_build "${POSECAST_BUILD_FLAGS[@]}" --build-tests; }

# Examples/PublishOwnFrames, a package of its own that depends on this one through
# SwiftPM, built into the same build folder: only its own files compile, and its
# executable lands beside ours (Tests/SystemTests/ExampleSystemTests runs it).
# Its executable is removed first: with the two packages taking turns in one build
# folder, SwiftPM called it up to date after our build had changed the modules it links
# (a two-hour-old binary against a new Publisher), and a missing output is rebuilt.
posecast_build_example() {
  rm -f "$POSECAST_RELEASE_BIN/publish-own-frames"
  posecast_swift_build "${POSECAST_BUILD_FLAGS[@]}" --package-path Examples/PublishOwnFrames --scratch-path .build
}

# Splits ARGS into --no-build (sets build=0, else build=1) and the rest (sets args).
posecast_take_no_build() {
  local a
  build=1 args=()
  for a in "$@"; do
    if [ "$a" = --no-build ]; then build=0; else args+=("$a"); fi
  done
}

# The options every scripts/bench-*, scripts/soak and scripts/hostile takes, split out of
# ARGS (the rest go to args):
#   --quick     the same code path end to end in seconds, not minutes: each script's
#               header says what it shrinks. The test suite runs every quick form
#               (Tests/SystemTests/ScriptQuickFormTests.swift) on the build it runs from.
#   --no-build  run what is already built.
# Sets quick (0/1), build (0/1), bin (where the products are) and args.
posecast_take_options() {
  local a
  quick=0 build=1 args=()
  for a in "$@"; do
    case "$a" in
      --quick) quick=1 ;;
      --no-build) build=0 ;;
      *) args+=("$a") ;;
    esac
  done
  bin=$POSECAST_RELEASE_BIN
  return 0
}

# Builds each PRODUCT unless --no-build.
posecast_build_products() {
  [ "$build" = 1 ] || return 0
  posecast_build_release "$@"
}

# Runs the Swift Testing tests FILTER selects from the test bundle (built with
# `posecast_build_tests`); further arguments go to the bundle.
posecast_run_tests() { "$POSECAST_TEST_BUNDLE" --testing-library swift-testing --filter "$@"; }

# matplotlib for python3 (the scripts' plots), installed with pip when missing; fails
# when it cannot be installed.
posecast_ensure_matplotlib() {
  python3 -c 'import matplotlib' 2>/dev/null || python3 -m pip install --quiet matplotlib >&2
}
