import CoreMetrics
import Courier
import Foundation

extension NetworkClientProtocol {
    /// Wraps this client so that every request is recorded in swift-metrics: a duration timer and a request counter,
    /// and an error counter for failures.
    ///
    /// | Metric | Kind | Dimensions |
    /// | --- | --- | --- |
    /// | `<prefix>.request.duration` | timer, nanoseconds | `method`, `status_class`, `origin` |
    /// | `<prefix>.requests` | counter | `method`, `status_class`, `origin` |
    /// | `<prefix>.errors` | counter | `method`, `status_class`, `origin`, `error` |
    ///
    /// The dimensions are bounded: `method` (`GET`), `status_class` (`2xx` … `5xx`, or `none` when no response
    /// arrived), `origin` (`https://api.example.com`: scheme, host and port, never a path or a query) and `error` (the
    /// error's case: `unacceptableStatusCode`, `transportFailed(timedOut)`, `cancelled`, …, never a text). The
    /// numbers come from the ``LogEntry`` of `logged(level:redacting:maximumBodyLength:to:)`, so they hold in every
    /// decorator order; the URL's user info never reaches a dimension. A streamed response counts once, as the call
    /// that opened it (its duration is the time to the head): the entry a stream writes when it ends is not counted.
    ///
    /// - Parameters:
    ///   - prefix: The start of every label; `"courier"` by default.
    ///   - factory: Where the metrics go; `MetricsSystem.factory` (what the process bootstrapped) by default.
    /// - Returns: A client that records the metrics of every request of this one.
    public func reportingMetrics(prefix: String = "courier", to factory: (any MetricsFactory)? = nil)
        -> some NetworkClientProtocol
    {
        let factory = factory ?? MetricsSystem.factory
        return logged(level: .info) { entry in
            // One call, one count: a stream's second entry, at its end, is not another call.
            if case .ended = entry.stream { return }
            let dimensions = MetricsBridge.dimensions(of: entry)
            CoreMetrics.Timer(label: "\(prefix).request.duration", dimensions: dimensions, factory: factory)
                .recordNanoseconds(Int64((entry.duration * 1_000_000_000).rounded()))
            Counter(label: "\(prefix).requests", dimensions: dimensions, factory: factory).increment()
            if let errorCase = entry.errorCase {
                Counter(
                    label: "\(prefix).errors", dimensions: dimensions + [("error", MetricsBridge.bounded(errorCase))],
                    factory: factory
                )
                .increment()
            }
        }
    }
}

/// The bounded dimensions of a request's metrics.
enum MetricsBridge {
    static func dimensions(of entry: LogEntry) -> [(String, String)] {
        [
            ("method", entry.method.rawValue), ("status_class", statusClass(entry.statusCode)),
            ("origin", origin(of: entry.url)),
        ]
    }

    static func statusClass(_ status: Int?) -> String {
        guard let status, (100..<600).contains(status) else { return "none" }
        return "\(status / 100)xx"
    }

    /// `scheme://host[:port]` of a logged URL (user info already redacted, and dropped here).
    static func origin(of url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return "unknown" }
        let rest = url[schemeEnd.upperBound...]
        var authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        return (url[..<schemeEnd.lowerBound] + "://" + authority).lowercased()
    }

    /// An error case without a status number (`unacceptableStatusCode(503)` → `unacceptableStatusCode`): the
    /// status is already the `status_class` dimension.
    static func bounded(_ errorCase: String) -> String {
        errorCase.hasPrefix("unacceptableStatusCode") ? "unacceptableStatusCode" : errorCase
    }
}
