import Logging

/// The executables' logs: swift-log's stream handler on stderr at one level (stdout
/// stays for events and status).
public enum StandardErrorLogging {
    /// Call once, before the first logger is made.
    public static func bootstrap(level: Logger.Level) {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}
