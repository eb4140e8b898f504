import Foundation
import HTTPEngine
import Kernel
import PortvaktAPI
import TestSupport
import Testing

/// The sign-in page's HTTP surface; what it does in a browser is Tests/Browser's job.
@Suite("Sign-in page")
struct WebPagesTests {
    private func pageRouter() -> Router {
        var router = Router()
        WebPages.register(on: &router)
        return router
    }

    /// The page's routes count against the standard class.
    private let configuration = HTTPServerConfiguration(
        rateLimits: [.standard: RateLimit(burst: 100, perSecond: 100)])

    @Test("GET / is HTML under the strict CSP, no-referrer and never cached")
    func pageHeaders() throws {
        try withInProcessServer(router: pageRouter(), configuration: configuration) { base, _ in
            let page = try InProcessHTTPClient().send(url: base + "/")
            #expect(page.status == 200)
            #expect(page.headers["Content-Type"] == "text/html; charset=utf-8")
            #expect(
                page.headers["Content-Security-Policy"]
                    == "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                    + "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
            #expect(page.headers["Referrer-Policy"] == "no-referrer")
            #expect(page.headers["Cache-Control"] == "no-store")
        }
    }

    @Test("the page loads only its two assets and has no inline script, style or handler")
    func noInlineCode() throws {
        try withInProcessServer(router: pageRouter(), configuration: configuration) { base, _ in
            let html = try InProcessHTTPClient().send(url: base + "/").text
            #expect(html.contains(#"<script src="\#(WebPages.scriptPath)" defer></script>"#))
            #expect(html.contains(#"<link rel="stylesheet" href="\#(WebPages.stylePath)">"#))
            #expect(html.components(separatedBy: "<script").count == 2)
            for inline in ["<style", " style=", " onclick=", " onload=", " onsubmit=", "javascript:", "http"]
            {
                #expect(!html.contains(inline), "the page contains \(inline)")
            }
            #expect(html.contains(#"autocomplete="username webauthn""#))
        }
    }

    @Test("assets are served under their content hash, immutable for a year, with their types")
    func assets() throws {
        try withInProcessServer(router: pageRouter(), configuration: configuration) { base, _ in
            let client = InProcessHTTPClient()
            for (path, type) in [
                (WebPages.scriptPath, "text/javascript; charset=utf-8"),
                (WebPages.stylePath, "text/css; charset=utf-8"),
            ] {
                #expect(path.wholeMatch(of: /\/assets\/app\.[0-9a-f]{16}\.(js|css)/) != nil)
                let asset = try client.send(url: base + path)
                #expect(asset.status == 200)
                #expect(asset.headers["Content-Type"] == type)
                #expect(asset.headers["Cache-Control"] == "public, max-age=31536000, immutable")
                #expect(asset.headers["X-Content-Type-Options"] == "nosniff")
                #expect(!asset.body.isEmpty)
            }
            #expect(try client.send(url: base + "/assets/app.0000000000000000.js").status == 404)
        }
    }

    @Test("every string key the page uses exists in both languages")
    func translations() throws {
        try withInProcessServer(router: pageRouter(), configuration: configuration) { base, _ in
            let client = InProcessHTTPClient()
            let html = try client.send(url: base + "/").text
            let script = try client.send(url: base + WebPages.scriptPath).text
            let english = try #require(script.firstRange(of: "  en: {")?.upperBound)
            let swedish = try #require(script.firstRange(of: "  sv: {")?.upperBound)
            let end = try #require(script[swedish...].firstRange(of: "\n  },")?.lowerBound)
            let keys = { (table: Substring) in
                Set(table.matches(of: /\n    '?([\w.]+)'?:/).map { String($0.output.1) })
            }
            let englishKeys = keys(script[english..<swedish])
            let swedishKeys = keys(script[swedish..<end])
            #expect(!englishKeys.isEmpty)
            #expect(englishKeys == swedishKeys)
            let used = Set(
                (html + script).matches(of: /(?:data-i18n="|\bt\(')([\w.]+)/).map { String($0.output.1) })
            #expect(
                used.subtracting(englishKeys).isEmpty, "missing strings: \(used.subtracting(englishKeys))")
        }
    }
}
