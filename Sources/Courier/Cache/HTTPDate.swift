import Foundation

/// HTTP dates (RFC 9110, 5.6.7): the preferred IMF-fixdate and the two obsolete forms a recipient must accept, parsed
/// without a `DateFormatter` (no locale, no shared formatter across threads).
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Seconds since 1970 for `text`, or `nil` when it is not an HTTP date in one of the three exact forms (RFC 9110
    /// asks a recipient to treat anything else, a missing comma or a one-digit hour included, as invalid):
    ///
    /// - `Sun, 06 Nov 1994 08:49:37 GMT` (IMF-fixdate)
    /// - `Sunday, 06-Nov-94 08:49:37 GMT` (RFC 850; a two-digit year more than 50 years ahead is taken in the past
    ///   century, as RFC 9110 asks)
    /// - `Sun Nov  6 08:49:37 1994` (asctime)
    static func parse(_ text: String) -> TimeInterval? {
        let tokens = text.trimmingCharacters(in: .whitespaces).split(separator: " ", omittingEmptySubsequences: false)
            .map(String.init)
        var day: Int?
        var month: Int?
        var year: Int?
        var time: (Int, Int, Int)?
        if tokens.count == 6, tokens[5].uppercased() == "GMT", tokens[0].count == 4, tokens[0].hasSuffix(","),
            tokens[1].count == 2, tokens[3].count == 4
        {  // IMF-fixdate
            day = number(tokens[1])
            month = monthNumber(tokens[2])
            year = number(tokens[3])
            time = clock(tokens[4])
        } else if tokens.count == 4, tokens[3].uppercased() == "GMT", tokens[0].hasSuffix(",") {  // RFC 850
            let parts = tokens[1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3, parts[0].count == 2, parts[2].count == 2, let short = number(parts[2]) else {
                return nil
            }
            day = number(parts[0])
            month = monthNumber(parts[1])
            let thisYear = civil(fromDays: Int(Date().timeIntervalSince1970 / 86_400)).0
            let candidate = thisYear - thisYear % 100 + short
            year = candidate > thisYear + 50 ? candidate - 100 : candidate
            time = clock(tokens[2])
        } else if tokens.count == 6, tokens[2].isEmpty, tokens[3].count == 1, tokens[5].count == 4 {
            // asctime with a one-digit day: "Sun Nov  6 08:49:37 1994"
            month = monthNumber(tokens[1])
            day = number(tokens[3])
            time = clock(tokens[4])
            year = number(tokens[5])
        } else if tokens.count == 5, tokens[2].count == 2, tokens[4].count == 4 {  // asctime, two-digit day
            month = monthNumber(tokens[1])
            day = number(tokens[2])
            time = clock(tokens[3])
            year = number(tokens[4])
        }
        guard let day, let month, let year, let time, (1...31).contains(day) else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return TimeInterval(days * 86_400 + time.0 * 3_600 + time.1 * 60 + time.2)
    }

    /// Digits only.
    private static func number(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }

    /// The IMF-fixdate of `seconds` since 1970.
    static func format(_ seconds: TimeInterval) -> String {
        let whole = Int(seconds.rounded(.down))
        let days = whole >= 0 ? whole / 86_400 : (whole - 86_399) / 86_400
        let rest = whole - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][((days % 7) + 7) % 7]
        let monthName = months[month - 1].capitalized
        return String(
            format: "%@, %02d %@ %04d %02d:%02d:%02d GMT", weekday, day, monthName, year, rest / 3_600,
            rest % 3_600 / 60, rest % 60)
    }

    private static func monthNumber(_ text: String) -> Int? {
        months.firstIndex(of: text.lowercased()).map { $0 + 1 }
    }

    private static func clock(_ text: String) -> (Int, Int, Int)? {
        let pieces = text.split(separator: ":", omittingEmptySubsequences: false)
        guard pieces.count == 3, pieces.allSatisfy({ $0.count == 2 }) else { return nil }
        let parts = pieces.compactMap { number(String($0)) }
        guard parts.count == 3, (0...23).contains(parts[0]), (0...59).contains(parts[1]), (0...60).contains(parts[2])
        else { return nil }
        return (parts[0], parts[1], parts[2])
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func civil(fromDays days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
