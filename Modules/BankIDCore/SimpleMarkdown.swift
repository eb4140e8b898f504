/// Checks `userVisibleData` meant for BankID's `simpleMarkdownV1` before it is sent.
///
/// BankID renders a small Markdown subset: headings (`#`, `##`, `###`), bold and italics with
/// `*`, tables whose rows start and end with `|`, horizontal lines (`---`), and `\` escaping a
/// marker. What lies outside it — links, images, code, HTML, deeper headings, an emphasis left
/// open — would reach the user as stray characters or be refused, so it is refused here, where
/// an operator can still fix the text.
public enum SimpleMarkdownV1 {
    /// What is wrong with `text` as simpleMarkdownV1, naming the line, or nil when it fits.
    public static func problem(_ text: String) -> String? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, raw) in lines.enumerated() {
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw[...]
            if let problem = lineProblem(line) { return "line \(index + 1): \(problem)" }
        }
        return nil
    }

    private static func lineProblem(_ line: Substring) -> String? {
        let trimmed = line.drop { $0 == " " }
        if trimmed.hasPrefix("#") {
            let level = trimmed.prefix { $0 == "#" }.count
            guard level <= 3 else { return "headings go to ### (level 3)" }
            let rest = trimmed.dropFirst(level)
            guard rest.first == " ", rest.contains(where: { $0 != " " }) else {
                return "a heading is #, ## or ### followed by a space and its text"
            }
        }
        // A horizontal line: three or more of one of -, * or _ and nothing else.
        let compact = trimmed.filter { $0 != " " }
        if compact.count >= 3, let marker = compact.first, "-*_".contains(marker),
            compact.allSatisfy({ $0 == marker })
        {
            return nil
        }
        if trimmed.hasPrefix("|"), !trimmed.trimmingSuffix(" ").hasSuffix("|") {
            return "a table row starts and ends with |"
        }
        var stars = 0
        var escaped = false
        var previous: Character = " "
        for character in trimmed {
            defer { previous = character }
            if escaped {
                escaped = false
                continue
            }
            switch character {
            case "\\": escaped = true
            case "*": stars += 1
            case "`": return "code (`) is not part of simpleMarkdownV1"
            case "<": return "HTML is not part of simpleMarkdownV1"
            case "(" where previous == "]": return "links are not part of simpleMarkdownV1"
            case "[" where previous == "!": return "images are not part of simpleMarkdownV1"
            default: break
            }
        }
        return stars % 2 == 0 ? nil : "an emphasis marker (*) is left open; escape a literal one as \\*"
    }
}

extension Substring {
    fileprivate func trimmingSuffix(_ character: Character) -> Substring {
        var result = self
        while result.last == character { result = result.dropLast() }
        return result
    }
}
