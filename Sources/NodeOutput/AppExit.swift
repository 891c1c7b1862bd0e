/// How a node's process could not start or had to stop, with the exit code its
/// executable returns and the one line it prints (both `PublisherApp` and `SubscriberApp`).
public struct AppExit: Error, Sendable, CustomStringConvertible {
    public var code: Int32
    public var message: String
    public var description: String { message }

    public init(code: Int32, message: String) { self.code = code; self.message = message }

    /// `program: error: text`, exit code `code` (2: bad set-up, the executables' usage code).
    public static func error(_ program: String, _ text: String, code: Int32 = 2) -> AppExit {
        AppExit(code: code, message: "\(program): error: \(text)")
    }
}
