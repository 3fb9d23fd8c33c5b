import Foundation

extension DirectoryLock {
    /// The outbox's lock: `outbox.lock` in `directory`, held for the outbox's lifetime. ``DirectoryLock`` is the
    /// mechanism (a disk ``ResponseCache`` takes one on its directory too); this is what the outbox calls it and the
    /// errors it throws.
    ///
    /// - Throws: ``OutboxError/directoryInUse(path:)`` when another `Outbox`, in this process or another, holds it;
    ///   ``OutboxError/storageFailed(operation:path:code:)`` when the lock file cannot be opened or locked.
    convenience init(directory: String) throws(OutboxError) {
        do {
            try self.init(directory: directory, name: "outbox.lock")
        } catch {
            switch error {
            case .held: throw .directoryInUse(path: directory)
            case .failed(let operation, let path, let code): throw OutboxFiles.error(operation, path, code)
            }
        }
    }
}
