/// The languages BankID's recommended user messages come in.
public enum MessageLanguage: String, Sendable, CaseIterable {
    /// Svenska.
    case swedish = "sv"
    /// English.
    case english = "en"
}

/// BankID's recommended user messages (RFA = "Recommendations For Action"), by their codes.
///
/// There is no RFA7, 10–12, 14 or 18 in the reference: those numbers are retired, so there are no
/// cases for them here either.
public enum RecommendedMessage: String, Sendable, CaseIterable {
    case rfa1 = "RFA1"
    case rfa2 = "RFA2"
    case rfa3 = "RFA3"
    case rfa4 = "RFA4"
    case rfa5 = "RFA5"
    case rfa6 = "RFA6"
    case rfa8 = "RFA8"
    case rfa9 = "RFA9"
    case rfa13 = "RFA13"
    case rfa15A = "RFA15A"
    case rfa15B = "RFA15B"
    case rfa16 = "RFA16"
    case rfa17A = "RFA17A"
    case rfa17B = "RFA17B"
    case rfa19 = "RFA19"
    case rfa20 = "RFA20"
    case rfa21 = "RFA21"
    case rfa22 = "RFA22"
    case rfa23 = "RFA23"

    /// The code clients receive, e.g. "RFA9".
    public var code: String { rawValue }

    /// The message text in `language`.
    public func text(_ language: MessageLanguage) -> String {
        switch language {
        case .swedish: swedish
        case .english: english
        }
    }

    private var swedish: String {
        switch self {
        case .rfa1: "Starta BankID-appen."
        case .rfa2: "Du har inte BankID-appen installerad. Kontakta din bank."
        case .rfa3: "Åtgärden avbruten. Försök igen."
        case .rfa4:
            "En identifiering eller underskrift för det här personnumret är redan påbörjad. Försök igen."
        case .rfa5, .rfa22: "Något gick fel. Försök igen."
        case .rfa6: "Åtgärden avbröts."
        case .rfa8:
            "BankID-appen svarar inte. Kontrollera att den är startad och att du har internetanslutning. Om du inte har ett giltigt BankID kan du skaffa ett hos din bank. Försök sedan igen."
        case .rfa9: "Skriv in din säkerhetskod i BankID-appen och välj Identifiera eller Skriv under."
        case .rfa13: "Försöker starta BankID-appen."
        case .rfa15A:
            "Söker efter BankID. Säkerställ att du har ett giltigt BankID på den här datorn. Om du har ett BankID på kort, sätt in kortet i kortläsaren."
        case .rfa15B: "Söker efter BankID. Säkerställ att du har ett giltigt BankID på den här enheten."
        case .rfa16:
            "Ditt BankID är för gammalt eller spärrat. Använd ett annat BankID eller skaffa ett nytt hos din bank."
        case .rfa17A:
            "Du verkar inte ha BankID-appen/programmet. Installera den och skaffa ett BankID hos din bank."
        case .rfa17B: "Misslyckades att läsa av QR-koden. Starta BankID-appen och läs av QR-koden."
        case .rfa19: "Vill du använda BankID på den här datorn eller ett Mobilt BankID?"
        case .rfa20: "Vill du använda BankID på den här enheten eller på en annan enhet?"
        case .rfa21: "En identifiering eller underskrift pågår."
        case .rfa23: "Fotografera och läs av din ID-handling med BankID-appen."
        }
    }

    private var english: String {
        switch self {
        case .rfa1: "Start your BankID app."
        case .rfa2: "The BankID app is not installed. Please contact your bank."
        case .rfa3: "The action was cancelled. Please try again."
        case .rfa4:
            "An identification or signing for this personal number is already started. Please try again."
        case .rfa5, .rfa22: "Something went wrong. Please try again."
        case .rfa6: "The action was cancelled."
        case .rfa8:
            "The BankID app is not responding. Please check that it's started and that you have internet access. If you don't have a valid BankID you can get one from your bank. Try again."
        case .rfa9: "Enter your security code in the BankID app and select Identify or Sign."
        case .rfa13: "Trying to start your BankID app."
        case .rfa15A:
            "Searching for BankID. Make sure you have a valid BankID on this computer. If you have a BankID on card, please insert the card into your card reader."
        case .rfa15B: "Searching for BankID. Make sure you have a valid BankID on this device."
        case .rfa16:
            "Your BankID is blocked or too old. Please use another BankID or get a new one from your bank."
        case .rfa17A:
            "You don't seem to have the BankID app/program. Please install it and get a BankID from your bank."
        case .rfa17B: "Failed to scan the QR code. Start the BankID app and scan the QR code."
        case .rfa19: "Would you like to use BankID on this computer, or a Mobile BankID?"
        case .rfa20: "Do you want to use BankID on this device or another device?"
        case .rfa21: "An identification or signing is in progress."
        case .rfa23: "Take a photo of, and scan, your ID document with the BankID app."
        }
    }
}

/// How the order was started, which decides between messages that BankID words differently for
/// autostart and QR, and for computers and phones.
public struct MessageContext: Sendable, Hashable {
    /// The kind of device the user started from.
    public enum Device: String, Sendable, Hashable {
        /// A computer (BankID on file or card possible).
        case desktop
        /// A phone or tablet.
        case mobile
    }

    /// Whether this device tried to open the BankID app with the autostart token.
    public var autoStartAttempted: Bool
    /// Whether the user was shown the animated QR code (BankID on another device).
    public var usesQRCode: Bool
    /// The device the user started from.
    public var device: Device

    /// Creates a context.
    public init(autoStartAttempted: Bool, usesQRCode: Bool, device: Device) {
        self.autoStartAttempted = autoStartAttempted
        self.usesQRCode = usesQRCode
        self.device = device
    }
}

extension RecommendedMessage {
    /// The message for a collect answer (the reference's hint-code → RFA mapping); nil for
    /// `complete`, which needs none.
    ///
    /// Known codes without a message of their own in the reference (userCallConfirm,
    /// userDeclinedCall, notSupportedByUserApp, transactionRiskBlocked) get their status's default,
    /// as unknown codes do: RFA21 while pending, RFA22 once failed.
    public static func forCollect(status: CollectStatus, hintCode: HintCode?, context: MessageContext)
        -> RecommendedMessage?
    {
        switch status {
        case .complete: return nil
        case .failed: return forFailed(hintCode, context: context)
        case .pending, .unknown: return forPending(hintCode, context: context)
        }
    }

    /// The message for a pending order's hint code.
    public static func forPending(_ hintCode: HintCode?, context: MessageContext) -> RecommendedMessage {
        switch hintCode {
        case .outstandingTransaction: context.autoStartAttempted ? .rfa13 : .rfa1
        case .noClient: .rfa1
        case .started: context.device == .desktop ? .rfa15A : .rfa15B
        case .userSign: .rfa9
        case .userMrtd: .rfa23
        default: .rfa21
        }
    }

    /// The message for a failed order's hint code; startFailed depends on whether a QR code was shown.
    public static func forFailed(_ hintCode: HintCode?, context: MessageContext) -> RecommendedMessage {
        switch hintCode {
        case .cancelled: .rfa3
        case .userCancel: .rfa6
        case .expiredTransaction: .rfa8
        case .certificateErr: .rfa16
        case .startFailed: context.usesQRCode ? .rfa17B : .rfa17A
        default: .rfa22
        }
    }
}
