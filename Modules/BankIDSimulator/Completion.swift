import CryptoCore
import FoundationEssentials
import Kernel

/// Builds completionData: the user, the device, the issue date, stepUp and risk when they apply,
/// an XML signature over what the user saw, and an OCSP-like response. The signature is a real
/// ECDSA signature by the simulator's server key over the SignedInfo element as written (no XML
/// canonicalisation), so a client can check that it is well-formed base64 XML from the simulator.
enum Completion {
    static func data(
        for order: Order, person: TestPerson, key: SigningKey, certificateDER: [UInt8], now: Date
    )
        -> JSONValue
    {
        let ip = order.deviceIP ?? order.request.endUserIp ?? "127.0.0.1"
        // uhi identifies the user's device: stable for a person on one address, never the number itself.
        let uhi = Base64URL.encode(Array(Digest.sha256("uhi|\(person.personalNumber)|\(ip)").prefix(20)))
        var members: [String: JSONValue] = [
            "user": [
                "personalNumber": .string(person.personalNumber), "name": .string(person.name),
                "givenName": .string(person.givenName), "surname": .string(person.surname),
            ],
            "device": ["ipAddress": .string(ip), "uhi": .string(uhi)],
            "bankIdIssueDate": .string(person.bankIdIssueDate),
            "signature": .string(
                signature(order: order, person: person, key: key, certificateDER: certificateDER, now: now)),
            "ocspResponse": .string(ocspResponse(order: order, key: key, now: now)),
        ]
        if order.request.mrtd { members["stepUp"] = ["mrtd": true] }
        if order.request.returnRisk { members["risk"] = .string(person.risk) }
        return .object(members)
    }

    /// A base64 XML signature in the shape BankID's has: SignedInfo with a digest of the
    /// bankIdSignedData object, the signature value, the signer's certificate, and the object
    /// holding the user-visible data, the user and the server info.
    static func signature(
        order: Order, person: TestPerson, key: SigningKey, certificateDER: [UInt8], now: Date
    )
        -> String
    {
        let visible =
            order.request.userVisibleData.map {
                "<usrVisibleData charset=\"UTF-8\" visible=\"wysiwys\">\($0)</usrVisibleData>"
            } ?? ""
        let object =
            "<Object><bankIdSignedData xmlns=\"http://www.bankid.com/signature/v1.0.0/types\" Id=\"bidSignedData\">"
            + visible
            + "<srvInfo><nonce>\(Base64.encode(Array(Digest.sha256(order.orderRef).prefix(16))))</nonce>"
            + "<orderRef>\(order.orderRef)</orderRef>"
            + "<time>\(Int(now.timeIntervalSince1970))</time></srvInfo>"
            + "<env><ai><type>\(order.request.kind.isPhone ? "PHONE" : "MOBILE")</type>"
            + "<name>\(escape(person.name))</name></ai></env>"
            + "</bankIdSignedData></Object>"
        let signedInfo =
            "<SignedInfo xmlns=\"http://www.w3.org/2000/09/xmldsig#\">"
            + "<CanonicalizationMethod Algorithm=\"http://www.w3.org/TR/2001/REC-xml-c14n-20010315\"/>"
            + "<SignatureMethod Algorithm=\"http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256\"/>"
            + "<Reference Type=\"http://www.bankid.com/signature/v1.0.0/types\" URI=\"#bidSignedData\">"
            + "<DigestMethod Algorithm=\"http://www.w3.org/2001/04/xmlenc#sha256\"/>"
            + "<DigestValue>\(Base64.encode(Digest.sha256(object)))</DigestValue></Reference></SignedInfo>"
        let value = (try? key.signSHA256(Array(signedInfo.utf8))).map(Base64.encode) ?? ""
        let xml =
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>"
            + "<Signature xmlns=\"http://www.w3.org/2000/09/xmldsig#\">" + signedInfo
            + "<SignatureValue>\(value)</SignatureValue>"
            + "<KeyInfo><X509Data><X509Certificate>\(Base64.encode(certificateDER))</X509Certificate></X509Data></KeyInfo>"
            + object + "</Signature>"
        return Base64.encode(Array(xml.utf8))
    }

    /// A DER structure shaped like an OCSPResponse (status successful, a basic response whose
    /// payload names the order and the time, signed by the server key). Not a real OCSP response:
    /// it lets clients store and pass on an opaque base64 value as they would BankID's.
    static func ocspResponse(order: Order, key: SigningKey, now: Date) -> String {
        let payload = DERWriter.sequence([
            DERWriter.element(0x0C, Array("good".utf8)),
            DERWriter.element(0x04, Digest.sha256(order.orderRef)),
            DERWriter.integer(Int(now.timeIntervalSince1970)),
        ])
        let signature = (try? key.signSHA256(payload)) ?? []
        let basic = DERWriter.sequence([payload, DERWriter.element(0x03, [0] + signature)])
        let response = DERWriter.sequence([
            DERWriter.element(0x0A, [0]),
            DERWriter.element(
                0xA0,
                DERWriter.sequence([
                    DERWriter.objectIdentifier("1.3.6.1.5.5.7.48.1.1"), DERWriter.element(0x04, basic),
                ])),
        ])
        return Base64.encode(response)
    }

    private static func escape(_ text: String) -> String {
        text.replacingEvery("&", with: "&amp;").replacingEvery("<", with: "&lt;")
            .replacingEvery(">", with: "&gt;")
    }
}
