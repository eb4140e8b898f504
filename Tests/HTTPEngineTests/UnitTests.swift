import Kernel
import TestSupport
import Testing

@testable import HTTPEngine

@Suite("Rate limiter and client address, without sockets")
struct UnitTests {
    @Test("rate-limit table stays within maxTrackedClients under 10x as many distinct clients")
    func limiterTableIsBounded() {
        let clock = ManualMonotonicClock()
        let limiter = RateLimiter(
            limits: [RateClass("default"): RateLimit(burst: 5, perSecond: 1)], maxTrackedClients: 1_000,
            clock: clock)
        for index in 0..<10_000 {
            let client = IPAddress(ipv4: 0x0A00_0000 | UInt32(index))
            #expect(limiter.check(routeClass: RateClass("default"), client: client) == .allowed)
            if index % 100 == 0 { clock.advance(seconds: 0.001) }
            if index % 1_000 == 999 { #expect(limiter.trackedCount <= 1_000) }
        }
        #expect(limiter.trackedCount <= 1_000)
        #expect(limiter.trackedCount > 0)
        // An unlimited class tracks nothing.
        _ = limiter.check(routeClass: .unlimited, client: IPAddress(ipv4: 1))
        #expect(limiter.trackedCount <= 1_000)
    }

    @Test("a recently limited client keeps its bucket while idle full buckets are evicted first")
    func limiterEvictsFullBucketsFirst() {
        let clock = ManualMonotonicClock()
        let limiter = RateLimiter(
            limits: [RateClass("default"): RateLimit(burst: 1, perSecond: 0.01)], maxTrackedClients: 16,
            clock: clock)
        let abuser = IPAddress(ipv4: 0xC000_0201)
        #expect(limiter.check(routeClass: RateClass("default"), client: abuser) == .allowed)
        #expect(
            limiter.check(routeClass: RateClass("default"), client: abuser)
                == .limited(retryAfterSeconds: 100))
        for index in 0..<200 {
            _ = limiter.check(routeClass: RateClass("default"), client: IPAddress(ipv4: UInt32(index + 1)))
        }
        #expect(limiter.trackedCount <= 16)
    }

    @Test("IP parsing normalises IPv4-mapped IPv6 and matches CIDR blocks of both families")
    func ipParsing() throws {
        #expect(IPAddress("::ffff:192.0.2.1")?.description == "192.0.2.1")
        #expect(IPAddress("2001:DB8:0:0::1")?.description == "2001:db8::1")
        #expect(IPAddress("fe80::1%eth0")?.description == "fe80::1")
        #expect(IPAddress("300.1.1.1") == nil)
        let v4 = try #require(IPNetwork("10.0.0.0/8"))
        #expect(v4.contains(try #require(IPAddress("10.200.3.4"))))
        #expect(v4.contains(try #require(IPAddress("::ffff:10.0.0.1"))))
        #expect(!v4.contains(try #require(IPAddress("11.0.0.1"))))
        let v6 = try #require(IPNetwork("2001:db8::/32"))
        #expect(v6.contains(try #require(IPAddress("2001:db8:ffff::1"))))
        #expect(!v6.contains(try #require(IPAddress("2001:db9::1"))))
        #expect(IPNetwork("0.0.0.0/0")?.contains(try #require(IPAddress("8.8.8.8"))) == true)
        #expect(IPNetwork("10.0.0.0/33") == nil)
    }

    @Test("forwarding headers from a trusted IPv6 proxy resolve bracketed, quoted and ported hops")
    func resolverForms() throws {
        let resolver = try ClientIPResolver(trustedProxies: ["::1", "2001:db8::/32"])
        let proxy = try #require(IPAddress("::1"))
        #expect(
            resolver.resolve(peer: proxy, headers: ["Forwarded": #"for="[2001:db8::5]:80", for="[2a00::9]""#])
                .description == "2a00::9")
        #expect(
            resolver.resolve(peer: proxy, headers: ["Forwarded": #"for="[2a00::7]", for="[2001:db8::5]:80""#])
                .description == "2a00::7")
        #expect(
            resolver.resolve(peer: proxy, headers: ["X-Forwarded-For": "2a00::1, 2001:db8::2"]).description
                == "2a00::1")
        // Every hop trusted: the leftmost is as far as we can see.
        #expect(
            resolver.resolve(peer: proxy, headers: ["X-Forwarded-For": "2001:db8::3"]).description
                == "2001:db8::3")
        let stranger = try #require(IPAddress("2a00::66"))
        #expect(resolver.resolve(peer: stranger, headers: ["X-Forwarded-For": "1.2.3.4"]) == stranger)
    }

    @Test("router: literal beats parameter, backtracks to a parameter, HEAD falls back to GET")
    func routerMatching() {
        var router = Router()
        router.add(.GET, "/a/b/x", rateClass: .unlimited, summary: "literal") { _ in .noContent }
        router.add(.GET, "/a/{p}/y", rateClass: .unlimited, summary: "param") { _ in .noContent }
        router.add(.POST, "/a/{p}/y", rateClass: .unlimited, summary: "param post") { _ in .noContent }
        router.add(.GET, "/", rateClass: .unlimited, summary: "root") { _ in .noContent }
        let compiled = CompiledRouter(router)
        guard case .matched(let match) = compiled.route(.GET, path: "/a/b/y") else {
            Issue.record("no match for /a/b/y")
            return
        }
        #expect(match.parameters == ["p": "b"])
        guard case .matched(let head) = compiled.route(.HEAD, path: "/a/b/x") else {
            Issue.record("HEAD did not reach GET")
            return
        }
        #expect(head.route.description.pattern == "/a/b/x")
        guard case .methodNotAllowed(let allowed) = compiled.route(.DELETE, path: "/a/z/y") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == [.GET, .HEAD, .POST, .OPTIONS])
        guard case .matched = compiled.route(.GET, path: "/") else {
            Issue.record("root not matched")
            return
        }
        guard case .notFound = compiled.route(.GET, path: "/a/b/x/") else {
            Issue.record("a trailing slash is a different resource")
            return
        }
        guard case .notFound = compiled.route(.GET, path: "/a/%zz/y") else {
            Issue.record("a broken escape must not match")
            return
        }
    }

    @Test("cookies are read from the Cookie header by exact name")
    func cookies() {
        let request = HTTPRequest(
            method: .GET, path: "/", headers: ["Cookie": #"a=1; session="tok"; sessionx=2"#])
        #expect(request.cookie("session") == "tok")
        #expect(request.cookie("a") == "1")
        #expect(request.cookie("missing") == nil)
    }
}
