/// Small text operations that full Foundation has and FoundationEssentials does not, written here
/// so that no production module needs Foundation (and, statically linked, ICU's data).
extension String {
    /// This text with every occurrence of `target` replaced by `replacement`, matched on UTF-8
    /// bytes as Foundation's `replacingOccurrences(of:with:)` matches the ASCII targets we use:
    /// unlike the standard library's Character-based `replacing`, "\n" matches inside "\r\n".
    public func replacingEvery(_ target: String, with replacement: String) -> String {
        let needle = Array(target.utf8)
        guard !needle.isEmpty else { return self }
        let bytes = Array(utf8)
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == needle[0], index + needle.count <= bytes.count,
                bytes[index..<index + needle.count].elementsEqual(needle)
            {
                result.append(contentsOf: replacement.utf8)
                index += needle.count
            } else {
                result.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// This text in Unicode Normalization Form C (canonical composition), as Foundation's
    /// `precomposedStringWithCanonicalMapping` gives it; done by the standard library, not ICU.
    public var canonicallyComposed: String {
        String(decoding: _nfcCodeUnits, as: UTF8.self)
    }

    /// This text padded with spaces on the right to `length` characters, or cut to it: what
    /// Foundation's `padding(toLength:withPad: " ", startingAt: 0)` gives.
    public func paddedWithSpaces(toLength length: Int) -> String {
        count >= length ? String(prefix(length)) : self + String(repeating: " ", count: length - count)
    }

    /// This path with one more component: `a` and `b` give `a/b`, `a/` and `b` give `a/b`, an
    /// empty path gives `b`, as `NSString.appendingPathComponent` does for the paths we build.
    public func appendingPathSegment(_ component: String) -> String {
        if isEmpty { return component }
        var base = self
        while base.count > 1, base.hasSuffix("/") { base.removeLast() }
        return base == "/" ? "/" + component : base + "/" + component
    }

    /// This path without its last component, as `NSString.deletingLastPathComponent`: `a/b`
    /// gives `a`, `/a` gives `/`, `a` gives the empty string.
    public var parentPath: String {
        var path = self
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        guard let slash = path.lastIndex(of: "/") else { return "" }
        if slash == path.startIndex { return "/" }
        var head = String(path[..<slash])
        while head.count > 1, head.hasSuffix("/") { head.removeLast() }
        return head
    }
}

extension StringProtocol {
    /// This text without leading and trailing spaces and tabs: what Foundation's
    /// `trimmingCharacters(in: .whitespaces)` removes (general category Zs and U+0009).
    public func trimmingWhitespace() -> String {
        trimmingScalars(where: Self.isWhitespace)
    }

    /// This text without leading and trailing white space and line breaks: what Foundation's
    /// `trimmingCharacters(in: .whitespacesAndNewlines)` removes (general category Z*,
    /// U+0009 to U+000D and U+0085).
    public func trimmingWhitespaceAndNewlines() -> String {
        trimmingScalars(where: Self.isWhitespaceOrNewline)
    }

    private func trimmingScalars(where isTrimmed: (Unicode.Scalar) -> Bool) -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !isTrimmed($0) }) else { return "" }
        let last = scalars.lastIndex(where: { !isTrimmed($0) })!
        return String(String.UnicodeScalarView(scalars[first...last]))
    }

    private static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "\t" || scalar.properties.generalCategory == .spaceSeparator
    }

    private static func isWhitespaceOrNewline(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09...0x0D, 0x85: return true
        default:
            switch scalar.properties.generalCategory {
            case .spaceSeparator, .lineSeparator, .paragraphSeparator: return true
            default: return false
            }
        }
    }
}
