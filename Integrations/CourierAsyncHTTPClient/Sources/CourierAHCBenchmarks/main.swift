// Courier over AsyncHTTPClient against raw AsyncHTTPClient, and against Courier over URLSession (Courier's default
// transport): small JSON GETs to an in-process SwiftNIO server at localhost, over HTTP and over HTTPS (a private CA
// made in the process, as the tests make theirs). Rounds are interleaved, the order rotating from round to round, and
// each ratio is taken between the contenders of one round; the medians and the min–max of those per-round ratios are
// reported, since these machines are noisy. Run it in release: `swift run -c release CourierAHCBenchmarks --help`.
//
// The top level is synchronous, as in Courier's own CourierBenchmarks: an `async` top level parks the main thread in
// `dispatch_main()`, whose `sigsuspend` kills valgrind (3.19), and a run at concurrency 1 is profiled with callgrind.
import Foundation

let arguments = CommandLine.arguments
func option(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
}
if arguments.contains("--help") {
    print(
        """
        CourierAHCBenchmarks [--requests 4000] [--rounds 7] [--concurrency 1,16,64] [--schemes http,https]
                             [--contenders raw,ahc,urlsession] [--urlsession-trust-file PATH]

        --urlsession-trust-file PATH: a copy of \(systemBundle) bind-mounted over it in a private mount namespace;
          the benchmark appends its CA to it so that Courier over URLSession (which trusts only that file on Linux)
          can be measured over HTTPS. Without it that contender is skipped over HTTPS. For example:
            cp \(systemBundle) /tmp/bundle.pem
            unshare --mount sh -c 'mount --bind /tmp/bundle.pem \(systemBundle) &&
              exec .build/release/CourierAHCBenchmarks --urlsession-trust-file /tmp/bundle.pem'
        """)
    exit(0)
}
let options = Options(
    requests: option("--requests").flatMap { Int($0) } ?? 4_000,
    rounds: option("--rounds").flatMap { Int($0) } ?? 7,
    concurrencies: (option("--concurrency") ?? "1,16,64").split(separator: ",").compactMap { Int($0) },
    schemes: (option("--schemes") ?? "http,https").split(separator: ",").map(String.init),
    contenders: Set((option("--contenders") ?? "raw,ahc,urlsession").split(separator: ",").map(String.init)),
    urlSessionTrustFile: option("--urlsession-trust-file"))
startAndWait(options)
