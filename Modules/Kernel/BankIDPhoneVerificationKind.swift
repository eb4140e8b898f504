/// What a support agent's BankID phone order asks for: an identification (/phone/auth) or the
/// confirmation of a text (/phone/sign). Stored (`bankid_phone_verifications.kind`) and shown by
/// the admin API as its raw value, which never changes.
public enum BankIDPhoneVerificationKind: String, Sendable, CaseIterable, Codable {
    /// /phone/auth: who is on the line?
    case auth
    /// /phone/sign: the person on the line confirms a text.
    case sign
}
