// `swift run CourierExample`: Courier in one minute, with no server of your own and no network.
//
// It starts the example API (ExampleServer.swift) on the project's in-process loopback server and drives the example
// SDK (ExampleSDK.swift) against it, printing what each call did. Exit status 0 only if every step behaved.
//
//   swift run CourierExample                     against the in-process example API
//   swift run CourierExample --serve             serve the example API until interrupted, and print its URL
//   swift run CourierExample --base-url URL      against the example API served elsewhere (e.g. by --serve)
import Courier
import Foundation

let usage = """
    usage: CourierExample [--base-url URL | --serve]
      (no option)      start the example API in process and run the example against it
      --base-url URL   run the example against the example API at URL (for example one started with --serve)
      --serve          serve the example API on 127.0.0.1 until interrupted
    """

if #available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *) {
    let arguments = Array(CommandLine.arguments.dropFirst())
    var server: ExampleServer?
    let baseURL: URL
    switch arguments.first {
    case nil:
        let started = try ExampleServer()
        server = started
        baseURL = started.baseURL
        print("Courier example, against the example API served in process at \(baseURL)")
    case "--serve":
        let started = try ExampleServer()
        print("Serving the example API at \(started.baseURL); stop with Ctrl-C.")
        print("In another shell: swift run CourierExample --base-url \(started.baseURL)")
        fflush(nil)  // Standard output may be a pipe: show the URL now.
        while true { try await Task.sleep(for: .seconds(3600)) }
    case "--base-url" where arguments.count == 2:
        guard let url = URL(string: arguments[1]), url.scheme != nil else {
            print("error: not a URL: \(arguments[1])\n\(usage)")
            exit(2)
        }
        baseURL = url
        print("Courier example, against \(baseURL)")
    default:
        print(usage)
        exit(arguments.first == "--help" || arguments.first == "-h" ? 0 : 2)
    }
    var example = Example(client: TodoClientFactory.makeClient(baseURL: baseURL, token: "example-token"))
    let behaved = await example.runAll()
    server?.server.stop()
    exit(behaved ? 0 : 1)
} else {
    print("CourierExample needs macOS 13, iOS 16, tvOS 16 or watchOS 9 (for its in-process server).")
    exit(1)
}
