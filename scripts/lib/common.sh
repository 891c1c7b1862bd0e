# What the scripts under scripts/ share in bash; each sources it after it cds to the
# package root:  . scripts/lib/common.sh
# Their Python halves are the .py files next to this one (paths.py has the paths below).

# Where SwiftPM puts the products and the test bundle.
POSECAST_RELEASE_BIN=.build/release
POSECAST_DEBUG_BIN=.build/debug
POSECAST_TEST_BUNDLE=$POSECAST_DEBUG_BIN/PoseCastPackageTests.xctest
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
    posecast_swift_build -c release --product "$product"
  done
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
#               header says what it shrinks. It runs the debug build, the one
#               `swift build --build-tests` makes, so the test suite runs every quick
#               form (Tests/SystemTests/ScriptQuickFormTests.swift) without a release build.
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
  [ "$quick" = 1 ] && bin=$POSECAST_DEBUG_BIN
  return 0
}

# Builds each PRODUCT for $bin (release; debug with --quick) unless --no-build.
posecast_build_products() {
  local product
  [ "$build" = 1 ] || return 0
  if [ "$quick" = 1 ]; then
    for product in "$@"; do posecast_swift_build --product "$product"; done
  else
    posecast_build_release "$@"
  fi
}

# Runs the Swift Testing tests FILTER selects from the test bundle (built with
# `posecast_swift_build --build-tests`); further arguments go to the bundle.
posecast_run_tests() { "$POSECAST_TEST_BUNDLE" --testing-library swift-testing --filter "$@"; }

# matplotlib for python3 (the scripts' plots), installed with pip when missing; fails
# when it cannot be installed.
posecast_ensure_matplotlib() {
  python3 -c 'import matplotlib' 2>/dev/null || python3 -m pip install --quiet matplotlib >&2
}
