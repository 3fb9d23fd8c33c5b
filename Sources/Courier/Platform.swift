// Linux shims live here and only here.
//
// On Linux, `URLSession`, `URLRequest` and `URLResponse` live in FoundationNetworking. Courier re-exports it so that
// SDK code written for Apple platforms (`import Courier` plus Foundation) compiles unchanged on Linux.
#if canImport(FoundationNetworking)
@_exported import FoundationNetworking
#endif
