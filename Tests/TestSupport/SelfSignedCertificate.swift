import Foundation

/// A throwaway self-signed certificate and key for `localhost` (made with the openssl
/// command), in a fresh folder the caller removes: for the wss:// tests.
public struct SelfSignedCertificate: Sendable {
    public let certificatePath: String
    public let keyPath: String
    public let directory: URL

    /// True when the openssl command the certificates are made with is installed.
    public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("posecast-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        certificatePath = directory.appendingPathComponent("cert.pem").path
        keyPath = directory.appendingPathComponent("key.pem").path
        let run = try ManagedProcess.runBlocking("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost", "-keyout", keyPath, "-out", certificatePath,
        ], timeout: 60)
        guard run.status == 0 else {
            throw Failure(description: "openssl req exited with \(run.status): \(run.stderrTail)")
        }
    }

    /// Removes the folder and both files.
    public func remove() { try? FileManager.default.removeItem(at: directory) }
}
