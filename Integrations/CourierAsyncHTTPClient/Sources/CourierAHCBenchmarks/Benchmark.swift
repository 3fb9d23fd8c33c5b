import AsyncHTTPClient
import Courier
import CourierAsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct Options: Sendable {
    var requests: Int
    var rounds: Int
    var concurrencies: [Int]
    var schemes: [String]
    /// Keys of the contenders to run: `raw`, `ahc`, `urlsession`.
    var contenders: Set<String>
    var urlSessionTrustFile: String?
}

/// Runs the benchmark in a task while this thread waits, then exits.
func startAndWait(_ options: Options) -> Never {
    // Created in a nonisolated function, so the task does not inherit the main actor that this thread blocks.
    Task {
        do {
            try await runBenchmark(options)
            exit(0)
        } catch {
            print("error: \(error)")
            exit(1)
        }
    }
    while true { DispatchSemaphore(value: 0).wait() }
}

struct Contender {
    let key: String
    let name: String
    let call: @Sendable () async throws -> Void
}

func startServer(on group: any EventLoopGroup, tls: NIOSSLContext?) async throws -> any Channel {
    try await ServerBootstrap(group: group)
        .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
        .serverChannelOption(ChannelOptions.backlog, value: 256)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                try channel.pipeline.syncOperations.addHandler(Answer())
            }
        }
        .bind(host: "127.0.0.1", port: 0).get()
}

func runBenchmark(_ options: Options) async throws {
    let authority = try BenchmarkAuthority(name: "CourierAHCBenchmarks CA")
    let authorityPEM = try authority.pem
    let serverTLS = try NIOSSLContext(configuration: authority.serverTLS())

    // The server runs on a thread of its own, whose CPU time is subtracted for the client's.
    let serverGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let serverClock = try await serverGroup.next().submit { () -> clockid_t in
        var clock = clockid_t()
        pthread_getcpuclockid(pthread_self(), &clock)
        return clock
    }.get()
    let plainServer = try await startServer(on: serverGroup, tls: nil)
    let tlsServer = try await startServer(on: serverGroup, tls: serverTLS)
    let urls = [
        "http": "http://localhost:\(plainServer.localAddress!.port!)/memo",
        "https": "https://localhost:\(tlsServer.localAddress!.port!)/memo",
    ]

    // One HTTPClient, trusting the benchmark's CA only, serves raw AsyncHTTPClient and Courier over AsyncHTTPClient.
    let http = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
        configuration: try AsyncHTTPClientTransport.configuration(
            tls: TLSOptions(trustRoots: .only(pem: authorityPEM))))
    let transport = try AsyncHTTPClientTransport(client: http)
    let decoder = JSONDecoder()
    let memo = NetworkRequest<VoidRequest, Memo>(method: .get)

    // Why Courier over URLSession is not measured over HTTPS, when it is not.
    let urlSessionOverHTTPS: String? =
        if let path = options.urlSessionTrustFile {
            trustForURLSession(pem: authorityPEM, through: path)
        } else {
            "corelibs URLSession trusts only \(systemBundle), process-wide; no --urlsession-trust-file was given"
        }

    func contenders(for scheme: String) -> [Contender] {
        let url = urls[scheme]!
        let overAHC = NetworkClient(
            configuration: NetworkConfiguration(transport: transport, baseURL: URL(string: url)!))
        let overURLSession = NetworkClient(configuration: NetworkConfiguration(baseURL: URL(string: url)!))
        var all = [
            Contender(key: "raw", name: "raw AsyncHTTPClient") {
                let response = try await http.execute(HTTPClientRequest(url: url), deadline: .now() + .seconds(30))
                let bytes = try await response.body.collect(upTo: 1 << 20)
                _ = try decoder.decode(Memo.self, from: Data(buffer: bytes))
            },
            Contender(key: "ahc", name: "Courier over AsyncHTTPClient") { _ = try await overAHC.run(memo) },
        ]
        if scheme == "http" || urlSessionOverHTTPS == nil {
            all.append(
                Contender(key: "urlsession", name: "Courier over URLSession") {
                    _ = try await overURLSession.run(memo)
                })
        }
        return all.filter { options.contenders.contains($0.key) }
    }

    let requests = options.requests
    print(
        "\(requests) GETs a round, \(options.rounds) rounds interleaved (order rotating); figures are medians"
            + " (min–max) over the rounds; ratios are per round, between contenders of the same round. Process CPU"
            + " includes the server's thread; client CPU is the process's less the server thread's.")
    if options.schemes.contains("https"), options.contenders.contains("urlsession"), let why = urlSessionOverHTTPS {
        print("Courier over URLSession over HTTPS: not measured (\(why)).")
    }
    var lines = [String]()
    for scheme in options.schemes {
        let all = contenders(for: scheme)
        for concurrency in options.concurrencies {
            for contender in all {  // Warm-up: connections open, code paged in.
                _ = try await measure(
                    requests: 400, concurrency: concurrency, serverClock: serverClock, contender.call)
            }
            var samples = [String: [Sample]]()
            for round in 0..<options.rounds {
                for index in all.indices {
                    let contender = all[(index + round) % all.count]
                    let sample = try await measure(
                        requests: requests, concurrency: concurrency, serverClock: serverClock, contender.call)
                    samples[contender.key, default: []].append(sample)
                }
            }
            print("\n\(scheme.uppercased()), concurrency \(concurrency)")
            print(
                "| contender | req/s | wall ÷ raw AHC | process CPU ÷ raw AHC | client CPU ÷ raw AHC"
                    + " | client CPU µs/req |")
            print("| --- | --: | --: | --: | --: | --: |")
            for contender in all {
                let mine = samples[contender.key]!
                let throughput = summary(mine.map { Double(requests) / $0.wall }, digits: 0)
                let perRequest = summary(mine.map { $0.clientCPU / Double(requests) * 1e6 }, digits: 1)
                guard let raw = samples["raw"] else {
                    print("| \(contender.name) | \(throughput) | | | | \(perRequest) |")
                    continue
                }
                let wall = summary(zip(mine, raw).map { $0.wall / $1.wall })
                let cpu = summary(zip(mine, raw).map { $0.cpu / $1.cpu })
                let client = summary(zip(mine, raw).map { $0.clientCPU / $1.clientCPU })
                print("| \(contender.name) | \(throughput) | \(wall) | \(cpu) | \(client) | \(perRequest) |")
            }
            if let overAHC = samples["ahc"], let overURLSession = samples["urlsession"] {
                let ratio = summary(zip(overAHC, overURLSession).map { $1.wall / $0.wall }, digits: 2)
                print("Courier over AsyncHTTPClient ÷ Courier over URLSession, throughput: \(ratio)")
                lines.append("\(scheme.uppercased()), concurrency \(concurrency): \(ratio)")
            }
        }
    }
    if !lines.isEmpty {
        print("\nThroughput, Courier over AsyncHTTPClient ÷ Courier over URLSession, per round:")
        for line in lines { print("  " + line) }
    }
    try await http.shutdown()
    try await plainServer.close()
    try await tlsServer.close()
    try await serverGroup.shutdownGracefully()
}
