import NIOSSL

/// The certificate and key the signaling server presents for `wss://`.
public struct SignalingServerTLS: Sendable, Hashable {
    /// PEM file with the server certificate, then any intermediates.
    public var certificateChainPath: String
    /// PEM file with the certificate's private key.
    public var privateKeyPath: String

    public init(certificateChainPath: String, privateKeyPath: String) {
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
    }

    /// NIOSSL's server configuration; errors name the file and what is wrong with it.
    func configuration() throws(SignalingServerError) -> TLSConfiguration {
        let chain: [NIOSSLCertificate]
        do { chain = try NIOSSLCertificate.fromPEMFile(certificateChainPath) } catch {
            throw .invalidConfiguration("TLS certificate \(certificateChainPath) cannot be read as PEM: \(error)")
        }
        guard !chain.isEmpty else {
            throw .invalidConfiguration("TLS certificate \(certificateChainPath) holds no certificate")
        }
        let key: NIOSSLPrivateKey
        do { key = try NIOSSLPrivateKey(file: privateKeyPath, format: .pem) } catch {
            throw .invalidConfiguration("TLS private key \(privateKeyPath) cannot be read as PEM: \(error)")
        }
        return TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) },
                                                        privateKey: .privateKey(key))
    }
}

/// How a client checks a `wss://` server: the system's trust store, or a CA file of its
/// own (for a self-signed or private-CA certificate). The host name is always verified.
public struct SignalingClientTLS: Sendable, Hashable {
    /// PEM file of the CA certificate(s) to trust instead of the system's; nil: the system's.
    public var caCertificatePath: String?

    public init(caCertificatePath: String? = nil) { self.caCertificatePath = caCertificatePath }

    func configuration() -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caCertificatePath { tls.trustRoots = .file(caCertificatePath) }
        return tls
    }
}
