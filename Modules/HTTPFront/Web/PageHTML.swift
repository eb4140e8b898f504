// The text below is served byte for byte; edit it here (Docs/signin-page.md).

/// The sign-in page's HTML; `{{SCRIPT}}` and `{{STYLE}}` become the asset URLs.
///
/// No inline script, style or event handler: the CSP allows only the two assets.
enum PageHTML {
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
        <section id="signed-out" aria-labelledby="signin-heading" hidden>
        <form id="enroll-form" aria-labelledby="enroll-heading" hidden>
        <h2 id="enroll-heading" tabindex="-1" data-i18n="enrollHeading"></h2>
        <p class="hint" data-i18n="enrollHint"></p>
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
        <h2 id="signup-heading" data-i18n="signUpHeading"></h2>
        <form id="signup-form">
        <label for="signup-username" data-i18n="username"></label>
        <input id="signup-username" name="username" autocomplete="username" autocapitalize="none" spellcheck="false"
         required>
        <label for="signup-display" data-i18n="displayName"></label>
        <input id="signup-display" name="displayName" autocomplete="name" required>
        <button type="submit" id="signup-button" data-i18n="signUpButton"></button>
        </form>
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
        </section>
        </main>
        <noscript><p>Portvakt needs JavaScript for passkeys. Portvakt behöver JavaScript för lösennycklar.</p></noscript>
        </body>
        </html>
        """#
}
