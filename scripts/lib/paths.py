"""Where the build puts what the scripts run, relative to the package root (every script
under scripts/ cds there first; scripts/lib/common.sh has the same paths for bash)."""
import os

BUILD = ".build"
RELEASE_BIN = os.path.join(BUILD, "release")   # swift build -c release -Xswiftc -enable-testing [--build-tests]
TEST_BUNDLE = os.path.join(RELEASE_BIN, "PoseCastPackageTests.xctest")

