import FoundationEssentials
import HTTPEngine

/// The user API's endpoints.
enum UserEndpoint: Sendable {
    case page
    case persons
    case readControl
    case scan
    case autostart
    case phone
    case respond
    case control
}

/// The user's side over plain HTTP on loopback: what the BankID app does (scan, open an autostart
/// link, answer a phone call), the control endpoint for scenarios and faults, and a small page.
extension SimulatorEngine {
    /// Every user route: the simulator's user listener registers these with the engine's router,
    /// and `handleUser` (in-process, for a server that mounts them itself) looks them up here.
    static let userRoutes: [(method: HTTPMethod, path: String, endpoint: UserEndpoint)] = [
        (.GET, "/", .page), (.GET, "/sim", .page), (.GET, "/sim/", .page),
        (.GET, "/sim/v1/persons", .persons), (.GET, "/sim/v1/control", .readControl),
        (.POST, "/sim/v1/scan", .scan), (.POST, "/sim/v1/autostart", .autostart),
        (.POST, "/sim/v1/phone", .phone), (.POST, "/sim/v1/respond", .respond),
        (.POST, "/sim/v1/control", .control),
    ]

    /// One user request by method and path, for in-process callers: the same routes, and the same
    /// answers for a wrong path or method, as on the simulator's own user listener.
    func handleUser(_ request: HTTPRequest) -> HTTPResponse {
        let method = request.method == .HEAD ? .GET : request.method
        let onPath = Self.userRoutes.filter { $0.path == request.path }
        if let route = onPath.first(where: { $0.method == method }) {
            return handleUser(route.endpoint, request)
        }
        guard !onPath.isEmpty else { return handleUnroutedUser(request, .notFound) }
        return handleUnroutedUser(request, .methodNotAllowed(allowed: onPath.map(\.method)))
    }

    /// A user request no route took: BankID-style error bodies, as the rest of the user API.
    func handleUnroutedUser(_ request: HTTPRequest, _ reason: FallbackReason) -> HTTPResponse {
        switch reason {
        case .notFound: return Self.error(404, "notFound", "Not found")
        case .methodNotAllowed(let allowed):
            let methods = allowed.filter { $0 != .HEAD && $0 != .OPTIONS }.map(\.rawValue)
            return Self.error(405, "methodNotAllowed", "Use " + methods.joined(separator: " or "))
        case .bodyTooLarge: return Self.error(400, "invalidRequest", "The body is too large")
        }
    }

    /// One request to a user endpoint.
    func handleUser(_ endpoint: UserEndpoint, _ request: HTTPRequest) -> HTTPResponse {
        switch endpoint {
        case .page:
            return HTTPResponse(
                status: 200, headers: ["Content-Type": "text/html; charset=utf-8"],
                body: Array(UserPage.html.utf8))
        case .persons: return Self.json(200, ["persons": .array(persons.map(Self.describe))])
        case .readControl: return Self.json(200, Self.describe(updateControls { _ in }))
        case .scan, .autostart, .phone, .respond, .control: break
        }
        guard let body = JSONValue.parse(request.body), let fields = body.object else {
            return Self.error(400, "invalidRequest", "The body must be a JSON object")
        }
        do throws(UserError) {
            if endpoint == .control { return try control(fields) }
            let action = try Self.action(fields["action"])
            let personalNumber = try Self.optionalString(fields, "personalNumber")
            // The engine's client address: the socket peer, as BankID sees the app's device.
            let ip = request.clientIP
            let result: ActionResult
            switch endpoint {
            case .scan:
                guard let qrData = fields["qrData"]?.string else {
                    throw UserError(400, "invalidRequest", "qrData missing")
                }
                result = try scan(qrData: qrData, personalNumber: personalNumber, action: action, from: ip)
            case .autostart:
                guard let token = fields["autoStartToken"]?.string else {
                    throw UserError(400, "invalidRequest", "autoStartToken missing")
                }
                result = try autostart(token: token, personalNumber: personalNumber, action: action, from: ip)
            default:
                guard let reference = fields["orderRef"]?.string else {
                    throw UserError(400, "invalidRequest", "orderRef missing")
                }
                result = try respond(
                    orderRef: reference, personalNumber: personalNumber, action: action,
                    phoneOnly: endpoint == .phone, from: ip)
            }
            var answer: [String: JSONValue] = [
                "orderRef": .string(result.orderRef), "status": .string(result.status),
            ]
            if let hint = result.hintCode { answer["hintCode"] = .string(hint) }
            if let text = result.userVisibleText { answer["userVisibleData"] = .string(text) }
            if let format = result.userVisibleDataFormat { answer["userVisibleDataFormat"] = .string(format) }
            // Only the app on the same device goes back to the returnUrl; a scan happens elsewhere.
            if let url = result.returnUrl, endpoint != .scan { answer["returnUrl"] = .string(url) }
            return Self.json(200, .object(answer))
        } catch {
            return Self.error(error.status, error.code, error.details)
        }
    }

    private static func action(_ value: JSONValue?) throws(UserError) -> UserAction {
        guard let value else { return .approve }
        guard let text = value.string, let action = UserAction(rawValue: text) else {
            throw UserError(
                400, "invalidRequest", "action must be one of \(UserAction.allCases.map(\.rawValue))")
        }
        return action
    }

    private static func optionalString(_ fields: [String: JSONValue], _ name: String) throws(UserError)
        -> String?
    {
        guard let value = fields[name] else { return nil }
        guard let text = value.string else {
            throw UserError(400, "invalidRequest", "\(name) must be a string")
        }
        return text
    }

    /// POST /sim/v1/control: {"outcomes": {pnr: outcome or null}, "latencyMilliseconds": n,
    /// "faults": [{"fault", "count"}], "clearFaults": true, "autoComplete": n or null}.
    private func control(_ fields: [String: JSONValue]) throws(UserError) -> HTTPResponse {
        let known: Set<String> = ["outcomes", "latencyMilliseconds", "faults", "clearFaults", "autoComplete"]
        if let unknown = fields.keys.first(where: { !known.contains($0) }) {
            throw UserError(400, "invalidRequest", "unknown control field \(unknown)")
        }
        var outcomes: [String: Outcome?] = [:]
        if let value = fields["outcomes"] {
            guard let map = value.object else {
                throw UserError(400, "invalidRequest", "outcomes must be an object")
            }
            for (number, outcome) in map {
                guard PersonalNumber.isValid(number) else {
                    throw UserError(400, "invalidRequest", "outcomes keys must be valid personal numbers")
                }
                if outcome == .null {
                    outcomes[number] = .some(nil)
                } else if let text = outcome.string, let parsed = Outcome(rawValue: text) {
                    outcomes[number] = parsed
                } else {
                    throw UserError(
                        400, "invalidRequest", "outcome must be one of \(Outcome.allCases.map(\.rawValue))")
                }
            }
        }
        var latency: Int?
        if let value = fields["latencyMilliseconds"] {
            guard let number = value.int, (0...60_000).contains(number) else {
                throw UserError(400, "invalidRequest", "latencyMilliseconds must be 0...60000")
            }
            latency = number
        }
        var faults: [Fault] = []
        if let value = fields["faults"] {
            guard case .array(let items) = value else {
                throw UserError(400, "invalidRequest", "faults must be a list")
            }
            for item in items {
                guard let fault = item.object?["fault"]?.string.flatMap(Fault.init(rawValue:)),
                    case let count = item.object?["count"]?.int ?? 1, (0...10_000).contains(count)
                else {
                    throw UserError(
                        400, "invalidRequest",
                        "a fault is {\"fault\": \(Fault.allCases.map(\.rawValue)), \"count\": n}")
                }
                faults += Array(repeating: fault, count: count)
            }
        }
        let clear = fields["clearFaults"]?.bool ?? false
        var autoComplete: Int??
        if let value = fields["autoComplete"] {
            if value == .null {
                autoComplete = .some(nil)
            } else if let number = value.int, number >= 0 {
                autoComplete = number
            } else {
                throw UserError(400, "invalidRequest", "autoComplete must be a number or null")
            }
        }
        let controls = updateControls { controls in
            for (number, outcome) in outcomes { controls.outcomes[number] = outcome }
            if let latency { controls.latencyMilliseconds = latency }
            if clear { controls.faults = [] }
            controls.faults += faults
            if let autoComplete { controls.autoCompleteAfter = autoComplete }
        }
        return Self.json(200, Self.describe(controls))
    }

    static func describe(_ person: TestPerson) -> JSONValue {
        [
            "personalNumber": .string(person.personalNumber), "name": .string(person.name),
            "givenName": .string(person.givenName), "surname": .string(person.surname),
            "risk": .string(person.risk),
        ]
    }

    static func describe(_ controls: Controls) -> JSONValue {
        [
            "outcomes": .object(controls.outcomes.mapValues { .string($0.rawValue) }),
            "latencyMilliseconds": .number(Double(controls.latencyMilliseconds)),
            "pendingFaults": .array(controls.faults.map { .string($0.rawValue) }),
            "autoComplete": controls.autoCompleteAfter.map { .number(Double($0)) } ?? .null,
        ]
    }
}

/// The user page: paste a QR code's text or an autostart token, pick a person and an action.
enum UserPage {
    static let html = """
        <!doctype html><html lang="en"><head><meta charset="utf-8"><title>BankID simulator</title>
        <style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}
        label{display:block;margin:.6rem 0}input,select{width:100%;padding:.3rem}pre{background:#eee;padding:.5rem}
        </style></head><body><h1>BankID simulator: the user's app</h1>
        <label>QR code text (bankid.…) or autostart token <input id="code"></label>
        <label>Test person <select id="person"></select></label>
        <label>Action <select id="action"><option>approve</option><option>cancel</option>
        <option>wrongCode</option><option>decline</option><option>start</option><option>open</option></select></label>
        <button id="go">Send</button>
        <section id="asked" hidden><h2>The app asks you to approve</h2><p id="text" style="white-space:pre-wrap"></p></section>
        <p id="hint"></p><pre id="out"></pre>
        <script>
        const $ = (id) => document.getElementById(id);
        fetch('/sim/v1/persons').then(r => r.json()).then(j => j.persons.forEach(p => {
          const o = document.createElement('option'); o.value = p.personalNumber;
          o.textContent = p.name + ' (' + p.personalNumber + ')'; $('person').appendChild(o); }));
        $('go').onclick = async () => {
          const code = $('code').value.trim(); const qr = code.startsWith('bankid.');
          const body = {personalNumber: $('person').value, action: $('action').value};
          if (qr) body.qrData = code; else body.autoStartToken = code;
          const r = await fetch(qr ? '/sim/v1/scan' : '/sim/v1/autostart',
            {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body)});
          const text = await r.text(); $('out').textContent = r.status + ' ' + text;
          let answer = {}; try { answer = JSON.parse(text); } catch (e) {}
          $('asked').hidden = !answer.userVisibleData; $('text').textContent = answer.userVisibleData || '';
          $('hint').textContent = answer.hintCode === 'userMrtd'
            ? 'Scan your passport or ID card (userMrtd): send "approve" again once it is scanned.' : ''; };
        </script></body></html>
        """
}
