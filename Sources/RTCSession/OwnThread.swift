import Foundation

/// Blocking work (a one-shot decode, a socket exchange) awaited from async code: run on
/// a thread of its own, never on the cooperative pool.
package enum OwnThread {
    package static func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { done in
            Thread.detachNewThread {
                do throws(E) { done.resume(returning: .success(try body())) } catch { done.resume(returning: .failure(error)) }
            }
        }
        return try result.get()
    }
}
