import HTTPEngine

// The text below is served byte for byte (with the BankID choices filled in); edit it here
// (Docs/signin-page.md).

/// The sign-in page's HTML; `{{SCRIPT}}` and `{{STYLE}}` become the asset URLs.
///
/// No inline script, style or event handler: the CSP allows only the two assets.
enum PageHTML {
    /// The two ways to run a BankID `intent`: another device (QR code) and this device; the
    /// page's script starts the order from the buttons' data attributes.
    static func bankIDChoice(_ intent: String, describedBy: String) -> String {
        """
        <div class="actions">
        <button type="button" data-intent="\(intent)" data-device="other" data-i18n="bankidOther"
         aria-describedby="\(describedBy)"></button>
        <button type="button" data-intent="\(intent)" data-device="same" data-i18n="bankidSame"
         aria-describedby="\(describedBy)"></button>
        </div>
        """
    }

    static let source = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Portvakt</title>
        <link rel="stylesheet" href="{{STYLE}}">
        <script src="{{SCRIPT}}" defer></script>
        </head>
        <body>
        <header>
        <h1>Portvakt</h1>
        <button type="button" id="language"></button>
        </header>
        <main>
        <p id="status" role="status" aria-live="polite"></p>
        <section id="bankid" aria-labelledby="bankid-heading" hidden>
        <h2 id="bankid-heading" tabindex="-1"></h2>
        <p id="bankid-message" aria-live="polite"></p>
        <button type="button" id="bankid-qr" aria-pressed="false" aria-describedby="bankid-qr-hint" hidden>
        <img id="bankid-qr-image" alt=""></button>
        <p id="bankid-qr-hint" class="hint" data-i18n="qrHint" hidden></p>
        <p id="bankid-countdown" class="hint" aria-hidden="true"></p>
        <p id="bankid-countdown-live" class="visually-hidden" aria-live="polite"></p>
        <div class="actions">
        <button type="button" id="bankid-launch" data-i18n="bankidLaunch" hidden></button>
        <button type="button" id="bankid-restart" data-i18n="bankidRestart" hidden></button>
        <button type="button" id="bankid-cancel" class="cancel" data-i18n="cancel"></button>
        </div>
        </section>
        <section id="signed-out" aria-labelledby="signin-heading" hidden>
        <form id="enroll-form" aria-labelledby="enroll-heading" hidden>
        <h2 id="enroll-heading" tabindex="-1" data-i18n="enrollHeading"></h2>
        <p id="enroll-hint" class="hint" data-i18n="enrollHint"></p>
        <button type="submit" id="enroll-button" data-i18n="enrollButton"></button>
        </form>
        <h2 id="signin-heading" tabindex="-1" data-i18n="signInHeading"></h2>
        <form id="signin-form">
        <label for="signin-username" data-i18n="username"></label>
        <input id="signin-username" name="username" autocomplete="username webauthn" autocapitalize="none"
         spellcheck="false" aria-describedby="signin-hint">
        <p id="signin-hint" class="hint" data-i18n="signInHint"></p>
        <button type="submit" id="signin-button" data-i18n="signInButton"></button>
        </form>
        <div id="bankid-login" hidden>
        <h3 id="bankid-login-heading" data-i18n="bankidLoginHeading"></h3>
        \#(bankIDChoice("login", describedBy: "bankid-login-heading"))
        </div>
        <h2 id="signup-heading" data-i18n="signUpHeading"></h2>
        <form id="signup-form">
        <label for="signup-username" data-i18n="username"></label>
        <input id="signup-username" name="username" autocomplete="username" autocapitalize="none" spellcheck="false"
         required>
        <label for="signup-display" data-i18n="displayName"></label>
        <input id="signup-display" name="displayName" autocomplete="name" required>
        <button type="submit" id="signup-button" data-i18n="signUpButton"></button>
        </form>
        <div id="bankid-signup" hidden>
        <h3 id="bankid-signup-heading" tabindex="-1" data-i18n="bankidSignupHeading"></h3>
        \#(bankIDChoice("signup", describedBy: "bankid-signup-heading"))
        </div>
        <div id="bankid-recovery" hidden>
        <h2 id="recovery-heading" data-i18n="recoveryHeading"></h2>
        <p id="recovery-hint" class="hint" data-i18n="recoveryHint"></p>
        \#(bankIDChoice("recovery", describedBy: "recovery-heading recovery-hint"))
        </div>
        </section>
        <section id="signed-in" aria-labelledby="account-heading" hidden>
        <div class="account-bar">
        <h2 id="account-heading" tabindex="-1"></h2>
        <button type="button" id="signout" data-i18n="signOut"></button>
        </div>
        <p id="account-username"></p>
        <h3 id="passkeys-heading" tabindex="-1" data-i18n="passkeysHeading"></h3>
        <ul id="passkeys"></ul>
        <form id="add-passkey-form">
        <label for="new-passkey-name" data-i18n="newPasskeyName"></label>
        <input id="new-passkey-name" name="name">
        <button type="submit" id="add-passkey-button" data-i18n="addPasskey"></button>
        </form>
        <h3 id="sessions-heading" tabindex="-1" data-i18n="sessionsHeading"></h3>
        <ul id="sessions"></ul>
        <button type="button" id="end-other-sessions" class="end-session" data-i18n="endOtherSessions" hidden></button>
        <div id="bankid-account" hidden>
        <h3 id="bankid-account-heading" tabindex="-1" data-i18n="bankidHeading"></h3>
        <p id="bankid-link-state"></p>
        <div id="bankid-link" hidden>
        <h4 id="bankid-link-heading" data-i18n="linkHeading"></h4>
        <p id="bankid-link-hint" class="hint" data-i18n="linkHint"></p>
        \#(bankIDChoice("link", describedBy: "bankid-link-heading bankid-link-hint"))
        </div>
        </div>
        <h3 id="your-account-heading" tabindex="-1" data-i18n="accountHeading"></h3>
        <form id="names-form">
        <label for="account-username-field" data-i18n="username"></label>
        <input id="account-username-field" name="username" autocomplete="username" autocapitalize="none"
         spellcheck="false" required>
        <label for="account-display-field" data-i18n="displayName"></label>
        <input id="account-display-field" name="displayName" autocomplete="name" required>
        <button type="submit" id="names-button" data-i18n="saveNames"></button>
        </form>
        <div class="actions">
        <button type="button" id="download-data" data-i18n="downloadData" aria-describedby="download-hint"></button>
        </div>
        <p id="download-hint" class="hint" data-i18n="downloadHint"></p>
        <div class="actions">
        <button type="button" id="delete-account" class="danger" data-i18n="deleteAccount"></button>
        </div>
        <dialog id="delete-dialog" aria-labelledby="delete-heading" aria-describedby="delete-consequence">
        <form id="delete-form" method="dialog">
        <h3 id="delete-heading" data-i18n="deleteHeading"></h3>
        <p id="delete-consequence" data-i18n="deleteConsequence"></p>
        <div class="check">
        <input type="checkbox" id="delete-confirm" required>
        <label for="delete-confirm" data-i18n="deleteConfirmLabel"></label>
        </div>
        <div class="actions">
        <button type="submit" id="delete-confirm-button" class="danger-solid" data-i18n="deleteForever"></button>
        <button type="button" id="delete-cancel" class="cancel" data-i18n="cancel"></button>
        </div>
        </form>
        </dialog>
        </section>
        </main>
        <noscript><p>Portvakt needs JavaScript for passkeys and BankID. Portvakt behöver JavaScript för lösennycklar och BankID.</p></noscript>
        </body>
        </html>
        """#
}
