import BankIDSimulator
import Foundation
import Kernel
import TestSupport
import Testing

/// Scenarios and faults, by configuration, by the control endpoint and in-process.
@Suite("Scenarios and faults")
struct ScenarioTests {
    static let body = #"{"endUserIp":"192.0.2.1"}"#

    @Test("configured bursts: 503 maintenance twice, then 500, 408, then normal service")
    func configuredFaults() throws {
        let harness = try Harness {
            $0.faults = [
                FaultBurst(.maintenance, count: 2), FaultBurst(.internalError, count: 1),
                FaultBurst(.requestTimeout, count: 1),
            ]
        }
        let expected = [
            (503, "maintenance"), (503, "maintenance"), (500, "internalError"), (408, "requestTimeout"),
        ]
        for (status, code) in expected {
            let response = try harness.post("auth", Self.body)
            #expect(response.status == status)
            #expect(response.errorCode == code)
        }
        #expect(try harness.post("auth", Self.body).status == 200)
    }

    @Test("a dropped connection: the client sees no response at all")
    func dropped() throws {
        let harness = try Harness()
        harness.simulator.inject(.dropConnection, count: 1)
        #expect(throws: HTTPTestClientError.self) { try harness.post("auth", Self.body) }
        #expect(try harness.post("auth", Self.body).status == 200)
    }

    @Test("the control endpoint queues faults, sets outcomes and reports its state")
    func controlEndpoint() throws {
        let harness = try Harness()
        let control = try harness.userPost(
            "control",
            #"{"faults":[{"fault":"maintenance","count":1}],"outcomes":{"199001012385":"certificateErr"}}"#)
        #expect(control.status == 200)
        let state = try control.jsonObject()
        #expect(state["pendingFaults"] as? [String] == ["maintenance"])
        #expect((state["outcomes"] as? [String: String])?["199001012385"] == "certificateErr")
        #expect(try harness.post("auth", Self.body).errorCode == "maintenance")
        let order = try harness.startAuth()
        _ = try harness.scan(order, extra: #","personalNumber":"199001012385""#)
        #expect(
            try harness.collect(order["orderRef"] as! String).body["hintCode"] as? String == "certificateErr")
        let bad = try harness.userPost("control", #"{"faults":[{"fault":"meteor"}]}"#)
        #expect(bad.status == 400 && bad.errorCode == "invalidRequest")
        #expect(try harness.userPost("control", #"{"outcomes":{"199001012385":null}}"#).status == 200)
        let again = try harness.startAuth()
        _ = try harness.scan(again, extra: #","personalNumber":"199001012385""#)
        #expect(try harness.collect(again["orderRef"] as! String).body["status"] as? String == "complete")
    }

    @Test(
        "per-person outcomes by configuration",
        arguments: [
            (Outcome.userCancel, "userCancel"), (.certificateErr, "certificateErr"),
            (.startFailed, "startFailed"),
            (.expiredTransaction, "expiredTransaction"), (.transactionRiskBlocked, "transactionRiskBlocked"),
        ])
    func configuredOutcome(outcome: Outcome, hint: String) throws {
        let harness = try Harness { $0.outcomes = ["198112289874": outcome] }
        let order = try harness.startAuth()
        #expect(try harness.scan(order).status == 200)
        let (_, body) = try harness.collect(order["orderRef"] as! String)
        #expect(body["status"] as? String == "failed")
        #expect(body["hintCode"] as? String == hint)
    }

    @Test("auto-complete after N collects, as the default test person")
    func autoComplete() throws {
        let harness = try Harness { $0.autoCompleteAfter = 2 }
        let orderRef = try harness.startAuth()["orderRef"] as! String
        #expect(try harness.collect(orderRef).body["status"] as? String == "pending")
        #expect(try harness.collect(orderRef).body["status"] as? String == "pending")
        let (_, body) = try harness.collect(orderRef)
        #expect(body["status"] as? String == "complete")
        let user = (body["completionData"] as? [String: Any])?["user"] as? [String: Any]
        #expect(user?["personalNumber"] as? String == "198112289874")
        // Phone orders complete as the person called.
        let phone = try harness.post("phone/auth", #"{"callInitiator":"RP","personalNumber":"199001012385"}"#)
        let phoneRef = try phone.jsonObject()["orderRef"] as! String
        _ = try harness.collect(phoneRef)
        _ = try harness.collect(phoneRef)
        let done = try harness.collect(phoneRef).body["completionData"] as? [String: Any]
        #expect((done?["user"] as? [String: Any])?["personalNumber"] as? String == "199001012385")
    }

    @Test("injected latency delays RP responses by at least the configured time")
    func latency() throws {
        let harness = try Harness()
        harness.simulator.setLatency(milliseconds: 300)
        let started = Date()
        #expect(try harness.post("auth", Self.body).status == 200)
        #expect(Date().timeIntervalSince(started) >= 0.3)
        harness.simulator.setLatency(milliseconds: 0)
    }
}

/// The scenario file `portvakt bankid-simulator --scenario FILE` reads.
@Suite("Scenario documents")
struct ScenarioDocumentTests {
    @Test("a scenario document sets persons, outcomes, faults, latency, auto-complete and timing")
    func apply() throws {
        var configuration = BankIDSimulatorConfiguration(dataDirectory: "/unused")
        let document = """
            {"testPersons": [{"personalNumber": "198001019879", "givenName": "Extra", "surname": "Person",
              "bankIdIssueDate": "2024-01-31", "risk": "moderate"}],
             "outcomes": {"199001012385": "userCancel"}, "faults": [{"fault": "maintenance", "count": 3}],
             "latencyMilliseconds": 200, "autoComplete": 2,
             "timing": {"startWindowSeconds": 20, "lifetimeSeconds": 60.5, "wrongCodeLimit": 5}}
            """
        try configuration.apply(scenarioJSON: Array(document.utf8))
        #expect(configuration.testPersons.first?.risk == "moderate")
        #expect(configuration.outcomes == ["199001012385": .userCancel])
        #expect(configuration.faults == [FaultBurst(.maintenance, count: 3)])
        #expect(configuration.latencyMilliseconds == 200 && configuration.autoCompleteAfter == 2)
        #expect(configuration.timing.startWindow == 20 && configuration.timing.lifetime == 60.5)
        #expect(configuration.timing.wrongCodeLimit == 5 && configuration.timing.completedRetention == 180)
    }

    @Test(
        "a wrong scenario document names the field",
        arguments: [
            #"[]"#, #"{"persons": []}"#, #"{"testPersons": [{"personalNumber": "198001019876"}]}"#,
            #"{"outcomes": {"199001012385": "maybe"}}"#, #"{"faults": [{"fault": "fire"}]}"#,
            #"{"latencyMilliseconds": -1}"#, #"{"timing": {"lifetime": 5}}"#,
            #"{"timing": {"lifetimeSeconds": 0}}"#,
        ])
    func refuse(document: String) {
        var configuration = BankIDSimulatorConfiguration(dataDirectory: "/unused")
        #expect(throws: SimulatorError(.configuration, "")) {
            try configuration.apply(scenarioJSON: Array(document.utf8))
        }
    }
}
