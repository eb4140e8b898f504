extension String {
    /// This text with A–Z folded to a–z and every other byte kept: the case-insensitivity of
    /// protocol tokens (HTTP coding names) and of SQL's lower() on both storage engines.
    public func lowercasedASCII() -> String {
        String(decoding: utf8.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
    }
}
