import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// GETs `url` every 100 ms for up to 30 s until it answers `status`; the last answer otherwise.
func poll(_ url: String, until status: Int) async throws -> (Int, String)? {
    var last: (Int, String)?
    for _ in 0..<300 {
        last = try? await get(url)
        if last?.0 == status { return last }
        try await Task.sleep(for: .milliseconds(100))
    }
    return last
}

func get(_ url: String) async throws -> (Int, String) {
    let (data, response) = try await URLSession.shared.data(from: URL(string: url)!)
    return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
}
