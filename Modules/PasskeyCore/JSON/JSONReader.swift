import Kernel

/// A JSON value as the ceremonies read it: the kernel's strict parser's value.
typealias JSONValue = StrictJSON.Value

/// A JSON object's members in the order they arrived; names are unique (the parser refuses repeats).
typealias JSONObject = StrictJSON.Object

/// The kernel's strict parser (`StrictJSON`) with PasskeyCore's error codes.
///
/// Strict where leniency would let two parsers disagree about the same bytes: the browser's client
/// data and ours must mean the same thing, so duplicate member names and every other leniency are
/// refused. Every failure throws `PasskeyError` with the code the caller chose, and a message with
/// the offset.
enum JSONReader {
    /// Parses exactly one JSON value from `input`, allowing only whitespace around it.
    ///
    /// - Parameters:
    ///   - input: UTF-8 bytes.
    ///   - code: The error code every syntax error gets (`response.malformed_json`, `clientdata.malformed`).
    ///   - what: Names the document in messages ("clientDataJSON").
    static func parse(_ input: [UInt8], code: PasskeyError.Code, what: String) throws(PasskeyError)
        -> JSONValue
    {
        do {
            return try StrictJSON.parse(input)
        } catch {
            throw Self.error(error, code: code, what: what)
        }
    }

    /// Parses `input` as one JSON object and returns its members with the exact byte range of each
    /// value, so an envelope can hand one member's bytes, untouched, to another strict parser.
    /// Same rules as `parse`: duplicates, trailing content and excess depth are refused.
    static func parseMembers(_ input: [UInt8], code: PasskeyError.Code, what: String) throws(PasskeyError)
        -> [StrictJSON.Member]
    {
        do {
            return try StrictJSON.parseMembers(input)
        } catch {
            throw Self.error(error, code: code, what: what)
        }
    }

    /// `parseMembers`, with the member called `name` checked by the same rules but not built
    /// (`StrictJSON.parseMembers(_:checkingOnly:)`): for a member whose bytes another strict parse
    /// reads again.
    static func parseMembers(
        _ input: [UInt8], checkingOnly name: String, code: PasskeyError.Code, what: String
    ) throws(PasskeyError) -> (members: [StrictJSON.Member], checked: StrictJSON.CheckedMember?) {
        do {
            return try StrictJSON.parseMembers(input, checkingOnly: name)
        } catch {
            throw Self.error(error, code: code, what: what)
        }
    }

    private static func error(_ error: StrictJSON.SyntaxError, code: PasskeyError.Code, what: String)
        -> PasskeyError
    {
        PasskeyError(code, "\(what) is not strict JSON: \(error.reason) at byte \(error.offset)")
    }
}
