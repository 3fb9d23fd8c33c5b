import Courier

// What the Resilience article's snippets take as given: where the app keeps its tokens.
actor SessionTokens {
    private(set) var access = "expired-token"

    func renew(replacing rejected: String) async throws -> String {
        access = "fresh-token"
        return access
    }
}

let tokens = SessionTokens()
