import CryptoCore
import FoundationEssentials
public import HTTPEngine
import Kernel

/// The built-in sign-in page at `GET /` and the two assets it loads, all compiled into the binary.
///
/// The page loads nothing from elsewhere and runs no inline code, so its Content-Security-Policy
/// allows only this origin. The assets' URLs carry a hash of their content: they are cached for a
/// year as immutable, and a new release changes the URL. The HTML itself is never cached, so it
/// always names the current assets (Docs/signin-page.md).
public enum WebPages {
    /// The policy on the page: its own script, style and API only; no framing, no `<base>`.
    public static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        + "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    /// The script's URL, `/assets/app.<hash>.js`.
    public static let scriptPath = script.path
    /// The style sheet's URL, `/assets/app.<hash>.css`.
    public static let stylePath = style.path

    /// Adds `GET /`, the script and the style sheet to `router`.
    /// - Parameter router: the public listener's router.
    public static func register(on router: inout Router) {
        let page = page
        router.add(
            .GET, "/", rateClass: .standard, summary: "The built-in sign-in page",
            contract: RouteContract(responses: [.media("text/html", "The page")])
        ) { _ in page }
        for asset in [script, style] {
            let response = asset.response
            router.add(
                .GET, asset.path, rateClass: .standard, summary: asset.summary,
                contract: RouteContract(responses: [.media(asset.mediaType, "The file")])
            ) { _ in response }
        }
    }

    private static let script = Asset(
        name: "app", fileExtension: "js", mediaType: "text/javascript",
        source: AppScript.source, summary: "The sign-in page's script (content-addressed, immutable)")
    private static let style = Asset(
        name: "app", fileExtension: "css", mediaType: "text/css",
        source: AppStyle.source, summary: "The sign-in page's style sheet (content-addressed, immutable)")

    /// The page, built once: the HTML with the assets' current URLs.
    private static let page: HTTPResponse = {
        let html = PageHTML.source
            .replacingEvery("{{SCRIPT}}", with: script.path)
            .replacingEvery("{{STYLE}}", with: style.path)
        var response = HTTPResponse.html(html)
        response.headers.set("Content-Security-Policy", contentSecurityPolicy)
        // The HTML is small and names the assets by hash: never caching it is what lets a new
        // release take effect on the next load.
        response.headers.set("Cache-Control", "no-store")
        return response
    }()
}

/// A file served from the binary under a URL that changes whenever its content does.
private struct Asset {
    let path: String
    let summary: String
    let mediaType: String
    let response: HTTPResponse

    init(name: String, fileExtension: String, mediaType: String, source: String, summary: String) {
        let bytes = Array(source.utf8)
        // 64 bits of SHA-256 is plenty to tell releases apart; it is not a security boundary.
        let hash = Digest.sha256(bytes).prefix(8).map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
        path = "/assets/\(name).\(hash).\(fileExtension)"
        self.summary = summary
        self.mediaType = mediaType
        var headers = HTTPHeaders()
        headers.set("Content-Type", mediaType + "; charset=utf-8")
        headers.set("Cache-Control", "public, max-age=31536000, immutable")
        response = HTTPResponse(status: 200, headers: headers, body: bytes)
    }
}
