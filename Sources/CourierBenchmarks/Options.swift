/// The command line.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct Options: Sendable {
    /// What the run does.
    enum Mode: Sendable, Equatable {
        /// The interleaved raw-versus-Courier benchmark.
        case benchmark
        /// Print the usage.
        case help
        /// Write the fixtures and an nginx.conf into a directory.
        case writeFixtures(directory: String)
        /// Only run the in-process server and print its base URL (to profile the client without the server).
        case serve
        /// Run one client's small GET loop at concurrency 1, for callgrind.
        case profile(ProfileClient, count: Int)
        /// Make one large request and print the process's peak resident set.
        case memory(MemoryScenario)
        /// Count instructions per request under callgrind and compare the ratios with a baseline file.
        case checkInstructions(baseline: String, update: Bool, count: Int)
        /// The outbox's durable enqueue rate and its sending cost against `sequential()`.
        case outbox
        /// What a `ResponseCache` saves: a fresh hit against a dictionary lookup and the network, a 304 against a 200.
        case cache
        /// Serve `GET /bytes/<n>` and `POST|PUT /discard` in this process for the transfer scenarios.
        case serveTransfers
        /// One transfer in this process; prints its wall time and the process's peak resident set.
        case transfer(TransferScenario)
        /// Every transfer scenario in child processes, in rounds, against a server in another child process.
        case transfers
        /// Events per second from a loopback event stream: Courier's `ServerSentEvents` against raw bytes.
        case streams
        /// A slow reader of a large event stream: peak resident set and how far the server gets ahead.
        case streamMemory
    }

    /// The client whose loop `--profile` runs.
    enum ProfileClient: String, Sendable, CaseIterable {
        /// Raw URLSession sending the same request as Courier (with `Accept: application/json`).
        case raw
        /// Raw without any header: corelibs' cost of one header is `raw` minus this.
        case rawNoAccept = "raw-no-accept"
        case courier
        case dedup
        case sequential
        /// Raw URLSession on its own `.default` session (on Linux without a `URLCache`, as Courier's).
        case rawOwnSession = "raw-own-session"
        /// Courier on the session it makes from `.default`.
        case courierOwnSession = "courier-own-session"
        /// Courier sending the same `Authorization: Bearer` header as `resilient`, without decorators: the baseline
        /// that tells the decorators' cost apart from corelibs' cost of one more header.
        case courierBearer = "courier-bearer"
        /// Raw URLSession sending the same `Authorization: Bearer` header as `resilient`: its like-for-like baseline.
        case rawBearer = "raw-bearer"
        /// Raw URLSession reading `/events` whole, cutting out its one event and decoding it.
        case rawEvent = "raw-event"
        /// Courier opening `/events` as `ServerSentEvents` and reading its one event to the end.
        case courierEvent = "courier-event"
        /// Courier with a `ResponseCache`: every `/cached.json` after the first is a fresh hit, no network.
        case courierCacheHit = "courier-cache-hit"
        /// `.deduplicated()` with `--waiters N` identical calls at once per round (one reaches the server, `/slow`):
        /// the cost of a waiter is the slope between N = 1 and N.
        case dedupWaiters = "dedup-waiters"
        /// The recommended resilience stack: `logged(…).retrying().authenticated(by:).deduplicated()`, happy path.
        case resilient
        /// The same stack without `.deduplicated()`: the three resilience decorators alone.
        case resilientNoDedup = "resilient-no-dedup"
        /// A test double answering at once, with no network: the floor under the `-double` rows.
        case double
        /// `.deduplicated()` over the test double: the decorator's own cost, without the network's noise.
        case dedupDouble = "dedup-double"
        /// The recommended stack over the test double: the decorators' own cost, without the network's noise.
        case resilientDouble = "resilient-double"
    }

    var mode = Mode.benchmark
    var json = false
    var quick = false
    var baseURL: String?
    var rounds: Int?
    /// The payload of the transfer modes, in bytes.
    var size: Int?
    /// `--count`: requests of a profile or a check, events of `--streams`.
    var count: Int?
    /// `--waiters`: identical calls at once per round of `--profile dedup-waiters`.
    var waiters = 1

    /// The default number of rounds of a full run, and the fewest allowed without `--quick`.
    static let defaultRounds = 9
    static let minimumRounds = 7
    /// The rounds of `--quick`.
    static let quickRounds = 3

    /// The rounds to run, after defaults.
    var effectiveRounds: Int {
        rounds ?? (quick ? Self.quickRounds : Self.defaultRounds)
    }

    static let usage = """
        Usage: CourierBenchmarks [--json] [--base-url URL] [--rounds N] [--quick]
               CourierBenchmarks --write-fixtures DIR

        Compares raw URLSession with Courier's NetworkClient, .deduplicated() and .sequential() in one process,
        in interleaved rounds (the first discarded as warm-up), and prints medians as a Markdown table.

          --json              print the results as a JSON array instead of the table (notes go to stderr)
          --base-url URL      send to an external server (e.g. nginx) instead of the in-process one; it must serve
                              /small.json, /large.json, POST /post and, for the fan-out, /slow (50 ms)
          --rounds N          rounds per scenario (default \(defaultRounds), at least \(minimumRounds) unless --quick)
          --quick             \(quickRounds) rounds of small chunks: a smoke test of a few seconds
          --write-fixtures DIR
                              write small.json, large.json, post and a sample nginx.conf into DIR, then exit

        Profiling (for valgrind --tool=callgrind):
          --profile raw|raw-no-accept|courier|dedup|sequential|raw-own-session|courier-own-session|courier-bearer|
                    raw-bearer|resilient|resilient-no-dedup|raw-event|courier-event|courier-cache-hit|dedup-waiters
                    [--count N] [--waiters W] [--base-url URL]
                              run 20 warm-up requests, then N (default 2000) small GETs at concurrency 1, and exit
                              (raw: the same request on the wire as Courier, on the same session configuration;
                              raw-no-accept: raw without the Accept header; resilient: the client
                              .logged(level: .info).retrying().authenticated(by: bearer).deduplicated(), every log
                              line formatted; courier-bearer: the bare client sending the same bearer header;
                              raw-bearer: raw sending it; dedup-waiters: N rounds of W identical calls of /slow at
                              once through .deduplicated(), one of which reaches the server)
          --serve             run only the in-process server, print its base URL, and serve until killed
          --check-instructions FILE [--update-baseline] [--count N]
                              run each client under valgrind --tool=callgrind in a child process (N requests,
                              default 2000), print instructions per request and the ratios to raw URLSession, and
                              fail when a ratio is more than 2% above FILE's (--update-baseline writes FILE instead)

        Memory (one request per process, then the peak resident set from getrusage; run each in its own process):
          --memory courier-300mb|raw-300mb|courier-gzip-bomb
                              courier-300mb: a 300 MB body into Data through Courier, maximumResponseSize raised;
                              raw-300mb: the same with raw URLSession; courier-gzip-bomb: a gzip bomb (4 GiB of
                              zeros, at most about 300 MiB of it sent) against the default 100 MiB limit

        Outbox:
          --outbox [--rounds N] [--quick]
                              durable Outbox enqueues per second from 1 and 16 callers, and small POSTs sent through
                              the outbox against sequential() (medians of N rounds, default 5; --quick: 1)

        Cache:
          --cache [--rounds N] [--quick] [--base-url URL]
                              a fresh ResponseCache hit against a dictionary lookup + decode and against a network
                              round trip, and a 304 revalidation of /large.json against its full 200, interleaved
                              (medians of N rounds, default 7; --quick: 3 rounds of small chunks)

        Streams:
          --streams [--count N] [--rounds N] [--quick]
                              events per second read from a loopback text/event-stream of N small events (default
                              1,000,000; --quick: 100,000 and 3 rounds): Courier's ServerSentEvents against raw
                              URLSession bytes cut into lines by a plain splitter, interleaved (medians of N rounds,
                              default 5)
          --stream-memory [--size BYTES]
                              a reader that sleeps 1 ms per 64 KiB event reads BYTES (default 1 GiB) of events through
                              Courier: the peak resident set, and the most the server got ahead of the reader; run it
                              in a process of its own

        Transfers (each in its own process, against a server in another; every byte checked):
          --transfers [--size BYTES] [--rounds N] [--json]
                              every scenario below as a child process, Courier and raw interleaved, N rounds
                              (default \(TransferDriver.defaultRounds)): median and range of peak RSS and wall time per
                              scenario, and the Courier/raw wall ratios. BYTES: default \(TransferDriver.defaultSize)
                              (200 MiB). Fails if a transfer fails or a byte differs, never on timing or memory
          --transfer SCENARIO [--size BYTES] [--base-url URL] [--json]
                              one transfer in this process, then one line: bytes, wall seconds (the transfer alone;
                              the payload file is written before the timer), peak RSS. Without --base-url a server is
                              started in a child process. SCENARIO is one of
                              \(transferNames)
          --serve-transfers   serve GET /bytes/<n> (n counting bytes; ETag, Last-Modified, Range and If-Range) and
                              POST|PUT /discard (the body read and dropped; answers {"received": n, "adler32": …}),
                              print the base URL, and serve until killed or until standard input, when it is a pipe,
                              is closed
        """

    private static let transferNames = TransferScenario.allCases.map(\.rawValue).joined(separator: ", ")

    /// Parses the arguments after the program name.
    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var profileClient: ProfileClient?
        var count: Int?
        var checkBaseline: String?
        var updateBaseline = false
        var remaining = arguments[...]
        func value(for flag: String) throws -> String {
            guard let value = remaining.popFirst() else { throw BenchmarkError.usage("\(flag) needs a value") }
            return value
        }
        func number(for flag: String, minimum: Int) throws -> Int {
            let text = try value(for: flag)
            guard let number = Int(text), number >= minimum else {
                throw BenchmarkError.usage("\(flag) needs a whole number of at least \(minimum), not \(text)")
            }
            return number
        }
        while let argument = remaining.popFirst() {
            switch argument {
            case "--json": options.json = true
            case "--quick": options.quick = true
            case "--base-url": options.baseURL = try value(for: argument)
            case "--rounds": options.rounds = try number(for: argument, minimum: 2)
            case "--write-fixtures": options.mode = .writeFixtures(directory: try value(for: argument))
            case "--serve": options.mode = .serve
            case "--outbox": options.mode = .outbox
            case "--cache": options.mode = .cache
            case "--serve-transfers": options.mode = .serveTransfers
            case "--transfers": options.mode = .transfers
            case "--streams": options.mode = .streams
            case "--stream-memory": options.mode = .streamMemory
            case "--size": options.size = try number(for: argument, minimum: 1)
            case "--transfer":
                let name = try value(for: argument)
                guard let scenario = TransferScenario(rawValue: name) else {
                    throw BenchmarkError.usage("--transfer takes one of \(transferNames), not \(name)")
                }
                options.mode = .transfer(scenario)
            case "--count": count = try number(for: argument, minimum: 0)
            case "--waiters": options.waiters = try number(for: argument, minimum: 1)
            case "--profile":
                let name = try value(for: argument)
                guard let client = ProfileClient(rawValue: name) else {
                    let names = ProfileClient.allCases.map(\.rawValue).joined(separator: ", ")
                    throw BenchmarkError.usage("--profile takes one of \(names), not \(name)")
                }
                profileClient = client
            case "--memory":
                let name = try value(for: argument)
                guard let scenario = MemoryScenario(rawValue: name) else {
                    let names = MemoryScenario.allCases.map(\.rawValue).joined(separator: ", ")
                    throw BenchmarkError.usage("--memory takes one of \(names), not \(name)")
                }
                options.mode = .memory(scenario)
            case "--check-instructions": checkBaseline = try value(for: argument)
            case "--update-baseline": updateBaseline = true
            case "-h", "--help": options.mode = .help
            default: throw BenchmarkError.usage("unknown argument \(argument)")
            }
        }
        if let profileClient { options.mode = .profile(profileClient, count: count ?? 2_000) }
        options.count = count
        if let checkBaseline {
            options.mode = .checkInstructions(baseline: checkBaseline, update: updateBaseline, count: count ?? 2_000)
        } else if updateBaseline {
            throw BenchmarkError.usage("--update-baseline goes with --check-instructions FILE")
        }
        if options.mode == .benchmark, !options.quick, let rounds = options.rounds, rounds < minimumRounds {
            throw BenchmarkError.usage("--rounds must be at least \(minimumRounds) (or add --quick)")
        }
        return options
    }
}
