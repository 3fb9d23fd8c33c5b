// Courier over AsyncHTTPClient against raw AsyncHTTPClient and against Courier over URLSession: small JSON GETs to an
// in-process SwiftNIO server on 127.0.0.1, over plain HTTP. Rounds are interleaved (A B C A B C …) and medians
// reported, since these machines are noisy. Run it in release: `swift run -c release CourierAHCBenchmarks`.
import AsyncHTTPClient
import Courier
import CourierAsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct Memo: Codable, Sendable {
    let id: Int
    let text: String
}

let body = Array(#"{"id":1,"text":"a small JSON answer"}"#.utf8)

/// Answers every request with `body`, keeping connections alive.
final class Answer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        let headers = HTTPHeaders([("Content-Type", "application/json"), ("Content-Length", String(body.count))])
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}

func cpuSeconds() -> Double {
    var usage = rusage()
    #if os(Linux)
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
}

/// Runs `requests` calls of `call` from `concurrency` tasks; returns wall and CPU seconds.
func measure(
    requests: Int, concurrency: Int, _ call: @escaping @Sendable () async throws -> Void
) async throws -> (wall: Double, cpu: Double) {
    let cpu = cpuSeconds()
    let start = DispatchTime.now().uptimeNanoseconds
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<concurrency {
            let share = requests / concurrency + (worker < requests % concurrency ? 1 : 0)
            group.addTask { for _ in 0..<share { try await call() } }
        }
        try await group.waitForAll()
    }
    return (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, cpuSeconds() - cpu)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

let arguments = CommandLine.arguments
let requests = arguments.firstIndex(of: "--requests").flatMap { Int(arguments[$0 + 1]) } ?? 4_000
let rounds = arguments.firstIndex(of: "--rounds").flatMap { Int(arguments[$0 + 1]) } ?? 5

let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
    .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline()
            try channel.pipeline.syncOperations.addHandler(Answer())
        }
    }
    .bind(host: "127.0.0.1", port: 0).get()
let url = "http://127.0.0.1:\(server.localAddress!.port!)/memo"

let http = HTTPClient(
    eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: try AsyncHTTPClientTransport.configuration())
let overAHC = NetworkClient(
    configuration: NetworkConfiguration(
        transport: try AsyncHTTPClientTransport(client: http), baseURL: URL(string: url)!))
let overURLSession = NetworkClient(configuration: NetworkConfiguration(baseURL: URL(string: url)!))
let decoder = JSONDecoder()
let memo = NetworkRequest<VoidRequest, Memo>(method: .get)

let variants: [(name: String, call: @Sendable () async throws -> Void)] = [
    (
        "raw AsyncHTTPClient",
        {
            let response = try await http.execute(HTTPClientRequest(url: url), deadline: .now() + .seconds(30))
            let bytes = try await response.body.collect(upTo: 1 << 20)
            _ = try decoder.decode(Memo.self, from: Data(buffer: bytes))
        }
    ),
    ("Courier over AsyncHTTPClient", { _ = try await overAHC.run(memo) }),
    ("Courier over URLSession", { _ = try await overURLSession.run(memo) }),
]

print("\(requests) GETs per round, \(rounds) rounds interleaved, medians; CPU is the whole process's (server included)")
for concurrency in [1, 16, 64] {
    var wall = [String: [Double]]()
    var cpu = [String: [Double]]()
    // Warm-up.
    for variant in variants { _ = try await measure(requests: 200, concurrency: concurrency, variant.call) }
    for _ in 0..<rounds {
        for variant in variants {
            let (w, c) = try await measure(requests: requests, concurrency: concurrency, variant.call)
            wall[variant.name, default: []].append(w)
            cpu[variant.name, default: []].append(c)
        }
    }
    print("concurrency \(concurrency):")
    let base = median(wall["raw AsyncHTTPClient"]!)
    let baseCPU = median(cpu["raw AsyncHTTPClient"]!)
    for variant in variants {
        let w = median(wall[variant.name]!)
        let c = median(cpu[variant.name]!)
        print(
            "  \(variant.name.padding(toLength: 30, withPad: " ", startingAt: 0)) \(Int(Double(requests) / w)) req/s, "
                + String(format: "wall %.3fx, CPU %.3fx of raw AsyncHTTPClient", w / base, c / baseCPU))
    }
}
try await http.shutdown().get()
try await server.close().get()
