import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// GETs `url` every 100 ms until it answers `status`, for up to `seconds` (by default two minutes:
/// a bound for a server that never will, wide enough for a slow machine's start); the last answer
/// otherwise.
func poll(_ url: String, until status: Int, seconds: Int = 120) async throws -> (Int, String)? {
    var last: (Int, String)?
    for _ in 0..<(seconds * 10) {
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
