// Placeholder; the metering routines go in this target.
