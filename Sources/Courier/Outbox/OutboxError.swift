import Foundation

/// Why an ``Outbox`` could not be opened or could not take an entry.
public enum OutboxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Another ``Outbox``, in this process or another, holds the directory's lock.
    case directoryInUse(path: String)
    /// A file operation failed; `code` is the `errno` value.
    case storageFailed(operation: String, path: String, code: Int32)
    /// The request carries a credential header (`Authorization`, `Proxy-Authorization`, `Cookie` or a configured
    /// sensitive header), which the outbox never writes to disk. The wrapped client must add it at send time.
    case secretHeader(name: String)
    /// The request carries a value the outbox never writes to disk: `name` is a secret-named query parameter, form
    /// field or JSON body field (see ``Outbox/secrets``), or `user info` in the base URL; `location` says where.
    case secretValue(name: String, location: String)
    /// Taking the entry would pass ``Outbox/Limits/maximumEntries``; nothing was stored.
    case tooManyEntries(limit: Int)
    /// Taking the entry would pass ``Outbox/Limits/maximumBytes``; nothing was stored.
    case tooManyBytes(limit: Int)
    /// The encoded body is larger than ``Outbox/Limits/maximumBodySize``; nothing was stored.
    case bodyTooLarge(size: Int, limit: Int)
    /// The request could not be stored: its body failed to encode or it is otherwise invalid.
    case invalidRequest(reason: String)
    /// The outbox was closed.
    case closed
    /// A send failed with an error that is not a ``NetworkClientError`` (for example from a test double); the text is
    /// its type or description. Delivered inside ``NetworkClientError/interceptorFailed(underlying:)``.
    case sendFailed(String)
    /// ``Outbox/result(of:as:decoder:)`` was asked about an entry this outbox does not know: never enqueued here,
    /// cancelled, or finished and forgotten (after a restart, or beyond ``Outbox/rememberedResults``).
    case unknownTicket
    /// ``Outbox/cancel(_:)`` removed the entry while ``Outbox/result(of:as:decoder:)`` waited for it.
    case entryCancelled

    /// A readable description; never contains a header value.
    public var description: String {
        switch self {
        case .directoryInUse(let path):
            return "The outbox directory \(path) is in use by another Outbox (in this or another process)."
        case .storageFailed(let operation, let path, let code):
            return
                "Outbox storage: \(operation) failed for \(path): \(errnoDescription(code))."
        case .secretHeader(let name):
            return "The request carries the credential header \(String(reflecting: name)), which the outbox never "
                + "stores; let the wrapped client add it at send time (interceptor or authenticator)."
        case .secretValue(let name, let location):
            return "The request carries the secret \(String(reflecting: name)) in \(location), which the outbox never "
                + "stores; let the wrapped client add it at send time, or change the outbox's secrets rules."
        case .tooManyEntries(let limit):
            return "The outbox holds its maximum of \(limit) entries; nothing was stored."
        case .tooManyBytes(let limit):
            return "The outbox holds its maximum of \(limit) bytes; nothing was stored."
        case .bodyTooLarge(let size, let limit):
            return "The body of \(size) bytes is larger than the outbox's per-entry limit of \(limit) bytes."
        case .invalidRequest(let reason):
            return "The request cannot be stored: \(reason)."
        case .closed:
            return "The outbox is closed."
        case .sendFailed(let text):
            return "The send failed: \(text)."
        case .unknownTicket:
            return
                "The outbox knows no entry for this ticket (never enqueued here, cancelled, or its result forgotten)."
        case .entryCancelled:
            return "The entry was cancelled before it was sent."
        }
    }
}
