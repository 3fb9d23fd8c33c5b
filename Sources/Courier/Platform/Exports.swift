// `import Courier` is enough to use Courier: URL, URLRequest, URLQueryItem, JSONDecoder and the rest of Foundation
// (and, on Linux, FoundationNetworking, re-exported in Platform.swift) come with it, as they do with MicroClient on
// Apple platforms.
@_exported import Foundation
