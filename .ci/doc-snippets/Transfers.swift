import Courier

// What the Transfers article's snippets take as given.
let backupURL = URL(fileURLWithPath: "/tmp/backup.zip")
let photoURL = URL(fileURLWithPath: "/tmp/sunset.jpg")
let thumbnailData = Data()
let moviesFolder = URL(fileURLWithPath: "/tmp/movies", isDirectory: true)
let fileURL = URL(fileURLWithPath: "/tmp/file.bin")

struct Photo: Decodable, Sendable {
    let id: Int
}
