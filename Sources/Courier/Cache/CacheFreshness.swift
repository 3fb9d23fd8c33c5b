import Foundation

/// How old a stored response is and how long it stays fresh (RFC 9111, 4.2), for a private cache.
struct CacheFreshness: Sendable {
    /// The response's current age in seconds (RFC 9111, 4.2.3).
    let currentAge: TimeInterval
    /// How long the response is fresh in seconds from its origin (RFC 9111, 4.2.1): `max-age`, else `Expires` minus
    /// `Date`, else a heuristic from `Last-Modified`; `s-maxage` is ignored (a private cache).
    let lifetime: TimeInterval
    /// Whether ``lifetime`` came from the heuristic.
    let isHeuristic: Bool

    /// The part of the age heuristics may use: ``ResponseCache/heuristicFraction`` of the time since
    /// `Last-Modified`, at most ``ResponseCache/maximumHeuristicLifetime``.
    init(_ stored: StoredResponse, now: TimeInterval) {
        let control = stored.cacheControl
        let date = stored.header("Date").flatMap(HTTPDate.parse) ?? stored.responseTime
        let ageValue =
            stored.header("Age").flatMap {
                CacheControl.deltaSeconds($0.split(separator: ",")[0].trimmingCharacters(in: .whitespaces))
            }.map(TimeInterval.init) ?? 0
        let apparentAge = max(0, stored.responseTime - date)
        let responseDelay = max(0, stored.responseTime - stored.requestTime)
        let correctedInitialAge = max(apparentAge, ageValue + responseDelay)
        currentAge = correctedInitialAge + max(0, now - stored.responseTime)
        if let maxAge = control.maxAge {
            (lifetime, isHeuristic) = (TimeInterval(maxAge), false)
        } else if control.invalidMaxAge {
            (lifetime, isHeuristic) = (0, false)
        } else if let expires = stored.header("Expires") {
            // An invalid Expires (for example "0") means already expired.
            let expiry = HTTPDate.parse(expires) ?? -.infinity
            (lifetime, isHeuristic) = (max(0, expiry - date), false)
        } else if let lastModified = stored.header("Last-Modified").flatMap(HTTPDate.parse),
            CachePolicy.heuristicallyCacheable.contains(stored.status) || control.isPublic || control.isPrivate
        {
            let span = max(0, date - lastModified) * ResponseCache.heuristicFraction
            (lifetime, isHeuristic) = (min(span, ResponseCache.maximumHeuristicLifetime), true)
        } else {
            (lifetime, isHeuristic) = (0, true)
        }
    }

    /// Whether the response is fresh now.
    var isFresh: Bool { lifetime > currentAge }

    /// Seconds past its lifetime (0 while fresh).
    var staleness: TimeInterval { max(0, currentAge - lifetime) }

    /// The `Age` header value served: whole seconds, rounded down.
    var ageHeader: Int {
        guard currentAge.isFinite, currentAge >= 0 else { return 0 }
        return Int(min(currentAge, TimeInterval(Int32.max)))
    }
}
