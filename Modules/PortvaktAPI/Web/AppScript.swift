import HTTPEngine
import Kernel

// The text below is served byte for byte; edit it here (Docs/signin-page.md).

/// The sign-in page's script, served as `/assets/app.<hash>.js`.
///
/// The reference web client for the passkey API: readable as is, no build step, no minifier.
enum AppScript {
    static let source = #"""
        // Portvakt's sign-in page: the reference web client for the passkey API (Docs/signin-page.md).
        // No frameworks, no build step. Every call is a same-origin fetch, so the browser sends the
        // session cookie and the Origin header the API checks; the page never sees the session token.
        'use strict';

        // ---- Strings: every text the page shows, in both languages, in this one table. ----
        const STRINGS = {
          en: {
            otherLanguage: 'Svenska',
            title: 'Sign in – Portvakt',
            signInHeading: 'Sign in',
            username: 'Username',
            signInHint: 'Leave the username empty to choose from the passkeys on this device.',
            signInButton: 'Sign in with a passkey',
            signUpHeading: 'Create an account',
            displayName: 'Your name',
            signUpButton: 'Create account with a passkey',
            signedInAs: 'Signed in as {name}',
            usernameIs: 'Username: {username}',
            signOut: 'Sign out',
            passkeysHeading: 'Your passkeys',
            newPasskeyName: 'Name for the new passkey (optional)',
            addPasskey: 'Add a passkey',
            provider: 'Provider',
            created: 'Created',
            lastUsed: 'Last used',
            never: 'never',
            unnamed: 'Passkey',
            unknownProvider: 'unknown',
            rename: 'Rename',
            renameLabel: 'New name for {name}',
            save: 'Save',
            cancel: 'Cancel',
            remove: 'Remove',
            sessionsHeading: 'Your sessions',
            thisSession: 'this session',
            sessionTitle: '{client} signed in with {method}',
            lastSeen: 'Last seen',
            expires: 'Expires',
            address: 'Address',
            endSession: 'End session',
            endOtherSessions: 'Sign out everywhere else',
            noOtherSessions: 'There was no other session to end.',
            working: 'Waiting for your passkey…',
            loading: 'Loading…',
            signedIn: 'You are signed in.',
            signedOut: 'You are signed out.',
            accountCreated: 'Your account is ready and you are signed in.',
            passkeyAdded: 'The passkey was added.',
            passkeyUpgraded: 'You are signed in, and your browser saved a passkey for this device: next time, sign in with it.',
            passkeyRenamed: 'The passkey was renamed.',
            passkeyRemoved: 'The passkey was removed.',
            sessionEnded: 'The session was ended.',
            noWebAuthn: 'This browser cannot use passkeys.',
            noWebAuthnBankID: 'You can sign in with BankID.',
            cancelled: 'The passkey request was cancelled or timed out.',
            alreadyRegistered: 'This device already holds a passkey for your account.',
            failed: 'Something went wrong. Please try again.',
            'passkey.last_passkey': 'This is your last passkey. Add another one before you remove it.',
            'session.missing': 'You are not signed in.',
            'bankid.sign_in_required': 'You are not signed in.',
            rate_limited: 'Too many attempts. Wait a moment and try again.',
            enrollHeading: 'Set up your passkey',
            enrollHint: 'You were sent a one-time link. Create a passkey on this device to get into your account.',
            enrollButton: 'Create my passkey',
            passkeyEnrolled: 'Your passkey is ready and you are signed in.',
            'enrollment.invalid': 'This link has been used or has expired. Ask for a new one.',
            bankidOther: 'BankID on another device',
            bankidSame: 'BankID on this device',
            bankidLoginHeading: 'Sign in with BankID',
            bankidSignupHeading: 'Create an account with BankID',
            recoveryHeading: 'Lost your passkey?',
            recoveryHint: 'If BankID is linked to your account, identify yourself with BankID and create a new passkey on this device.',
            recoveryOrderHeading: 'Get back in with BankID',
            bankidHeading: 'BankID',
            bankidLinked: 'BankID is linked to your account ({name}).',
            bankidNotLinked: 'BankID is not linked to your account.',
            linkHeading: 'Link BankID',
            linkHint: 'Then you can sign in with BankID when no passkey is at hand, and get back in if you lose your passkeys.',
            qrFullScreen: 'Show the QR code full screen',
            qrAlt: 'QR code for BankID',
            qrHint: 'Open the BankID app and scan the QR code. Select the code to enlarge it; Escape makes it small again.',
            qrSecondsLeft: 'The QR code is valid for {seconds} more seconds.',
            qrExpired: 'The QR code is no longer valid. Start again to get a new one.',
            bankidStarting: 'Starting BankID…',
            bankidLaunch: 'Open the BankID app',
            bankidRestart: 'Start again',
            close: 'Close',
            awaitingReturn: 'BankID is done. Continue on the page the BankID app opened.',
            bankidCancelled: 'BankID was cancelled.',
            bankidSuggestPasskey: 'You are signed in. Add a passkey on this device to sign in without BankID next time.',
            bankidAccountCreated: 'Your account is ready and you are signed in. Add a passkey on this device to sign in without BankID next time.',
            recoveryVerified: 'BankID confirmed who you are.',
            recoveryEnrollHint: 'Create a passkey on this device to get back into your account.',
            accountRecovered: 'Your new passkey is ready and you are signed in.',
            sessionsEndedOne: 'Your other session was ended.',
            sessionsEndedMany: 'Your {count} other sessions were ended.',
            passkeysRemovedOne: 'Your old passkey was removed.',
            passkeysRemovedMany: 'Your {count} old passkeys were removed.',
            passkeysKept: 'Your old passkeys still work: remove the ones you lost below.',
            noAccountSignup: 'No account is linked to this BankID. You can create one with BankID.',
            'bankid.no_account': 'No account is linked to this BankID.',
            'bankid.linked': 'BankID is now linked to your account.',
            'bankid.already_linked': 'BankID was already linked to your account.',
            'bankid.identity_linked_elsewhere': 'This BankID is linked to another account.',
            'bankid.account_has_identity': 'Your account is linked to another BankID.',
            'bankid.account_exists': 'You already have an account. Sign in instead.',
            'bankid.risk_refused': 'BankID could not be used this time. Use a passkey, or try again later.',
            'bankid.result_delivered': 'This BankID order was already used. Start again.',
            'bankid.order_not_found': 'The BankID order has ended. Start again.',
            'bankid.order_expired': 'The BankID order has ended. Start again.',
            'bankid.unavailable': 'BankID is not available right now. Try again in a moment.',
            'bankid.already_in_progress': 'BankID is already in use for you. Finish or cancel it in the BankID app, then try again.',
            'bankid.return_mismatch': 'This return from BankID does not belong to the order started here. Start again.',
            'account.disabled': 'This account is disabled.',
            method_disabled: 'That is switched off on this server.',
            accountHeading: 'Your account',
            saveNames: 'Save',
            namesSaved: 'Your name was saved.',
            namesUnchanged: 'Nothing to save: the names are as they were.',
            'user.invalid_username': 'That username cannot be used. Choose another one.',
            'user.invalid_display_name': 'That name cannot be used. Write it another way.',
            'user.username_taken': 'That username is taken. Choose another one.',
            downloadData: 'Download my data',
            downloadHint: 'One JSON file with everything this server holds about you: your account, passkeys, sessions, BankID link and the log of what happened to your account.',
            dataDownloaded: 'Your data was downloaded as {file}.',
            deleteAccount: 'Delete my account',
            deleteHeading: 'Delete your account?',
            deleteConsequence: 'Your account, every passkey, every session and any BankID link are removed at once, on every device. This cannot be undone. The server keeps the log of what happened to the account, naming it by its id only, for a limited time.',
            deleteConfirmLabel: 'I understand: delete my account and everything in it',
            deleteForever: 'Delete my account for good',
            accountDeleted: 'Your account was deleted. You are signed out.',
            'review.deletion_refused': 'This account cannot be deleted here.',
            reauthPasskey: 'To do that, confirm that it is you with your passkey…',
            reauthBankID: 'To do that, confirm that it is you: sign with BankID.',
            reauthOrderHeading: 'Confirm that it is you',
            reauthSignText: 'I confirm that it is me, to change my account at {host}.',
            reauthenticationIncomplete: 'You did not confirm that it is you, so nothing was changed.',
            reauthenticationUnavailable: 'For this, sign out and sign in again first (it needs a recent sign-in).',
            'reauthentication_failed': 'That passkey is not one of your account’s.',
            'bankid.identity_mismatch': 'That BankID is not the one linked to your account, so nothing was changed.',
          },
          sv: {
            otherLanguage: 'English',
            title: 'Logga in – Portvakt',
            signInHeading: 'Logga in',
            username: 'Användarnamn',
            signInHint: 'Lämna användarnamnet tomt för att välja bland lösennycklarna på den här enheten.',
            signInButton: 'Logga in med lösennyckel',
            signUpHeading: 'Skapa ett konto',
            displayName: 'Ditt namn',
            signUpButton: 'Skapa konto med lösennyckel',
            signedInAs: 'Inloggad som {name}',
            usernameIs: 'Användarnamn: {username}',
            signOut: 'Logga ut',
            passkeysHeading: 'Dina lösennycklar',
            newPasskeyName: 'Namn på den nya lösennyckeln (valfritt)',
            addPasskey: 'Lägg till en lösennyckel',
            provider: 'Leverantör',
            created: 'Skapad',
            lastUsed: 'Senast använd',
            never: 'aldrig',
            unnamed: 'Lösennyckel',
            unknownProvider: 'okänd',
            rename: 'Byt namn',
            renameLabel: 'Nytt namn på {name}',
            save: 'Spara',
            cancel: 'Avbryt',
            remove: 'Ta bort',
            sessionsHeading: 'Dina sessioner',
            thisSession: 'den här sessionen',
            sessionTitle: '{client}, inloggad med {method}',
            lastSeen: 'Senast aktiv',
            expires: 'Upphör',
            address: 'Adress',
            endSession: 'Avsluta session',
            endOtherSessions: 'Logga ut på alla andra enheter',
            noOtherSessions: 'Det fanns ingen annan session att avsluta.',
            working: 'Väntar på din lösennyckel…',
            loading: 'Laddar…',
            signedIn: 'Du är inloggad.',
            signedOut: 'Du är utloggad.',
            accountCreated: 'Ditt konto är klart och du är inloggad.',
            passkeyAdded: 'Lösennyckeln lades till.',
            passkeyUpgraded: 'Du är inloggad, och webbläsaren sparade en lösennyckel för den här enheten: logga in med den nästa gång.',
            passkeyRenamed: 'Lösennyckeln fick ett nytt namn.',
            passkeyRemoved: 'Lösennyckeln togs bort.',
            sessionEnded: 'Sessionen avslutades.',
            noWebAuthn: 'Den här webbläsaren kan inte använda lösennycklar.',
            noWebAuthnBankID: 'Du kan logga in med BankID.',
            cancelled: 'Begäran om lösennyckel avbröts eller tog för lång tid.',
            alreadyRegistered: 'Den här enheten har redan en lösennyckel för ditt konto.',
            failed: 'Något gick fel. Försök igen.',
            'passkey.last_passkey': 'Det här är din sista lösennyckel. Lägg till en till innan du tar bort den.',
            'session.missing': 'Du är inte inloggad.',
            'bankid.sign_in_required': 'Du är inte inloggad.',
            rate_limited: 'För många försök. Vänta en stund och försök igen.',
            enrollHeading: 'Skapa din lösennyckel',
            enrollHint: 'Du har fått en engångslänk. Skapa en lösennyckel på den här enheten för att komma in på ditt konto.',
            enrollButton: 'Skapa min lösennyckel',
            passkeyEnrolled: 'Din lösennyckel är klar och du är inloggad.',
            'enrollment.invalid': 'Länken har redan använts eller har gått ut. Be om en ny.',
            bankidOther: 'BankID på en annan enhet',
            bankidSame: 'BankID på den här enheten',
            bankidLoginHeading: 'Logga in med BankID',
            bankidSignupHeading: 'Skapa ett konto med BankID',
            recoveryHeading: 'Har du tappat bort din lösennyckel?',
            recoveryHint: 'Om BankID är kopplat till ditt konto kan du legitimera dig med BankID och skapa en ny lösennyckel på den här enheten.',
            recoveryOrderHeading: 'Kom tillbaka in med BankID',
            bankidHeading: 'BankID',
            bankidLinked: 'BankID är kopplat till ditt konto ({name}).',
            bankidNotLinked: 'BankID är inte kopplat till ditt konto.',
            linkHeading: 'Koppla BankID',
            linkHint: 'Då kan du logga in med BankID när du inte har din lösennyckel, och komma tillbaka in om du tappar bort dina lösennycklar.',
            qrFullScreen: 'Visa QR-koden i helskärm',
            qrAlt: 'QR-kod för BankID',
            qrHint: 'Öppna BankID-appen och skanna QR-koden. Välj koden för att förstora den; Escape gör den liten igen.',
            qrSecondsLeft: 'QR-koden gäller i {seconds} sekunder till.',
            qrExpired: 'QR-koden gäller inte längre. Börja om för att få en ny.',
            bankidStarting: 'Startar BankID…',
            bankidLaunch: 'Öppna BankID-appen',
            bankidRestart: 'Börja om',
            close: 'Stäng',
            awaitingReturn: 'BankID är klart. Fortsätt på sidan som BankID-appen öppnade.',
            bankidCancelled: 'BankID avbröts.',
            bankidSuggestPasskey: 'Du är inloggad. Lägg till en lösennyckel på den här enheten så kan du logga in utan BankID nästa gång.',
            bankidAccountCreated: 'Ditt konto är klart och du är inloggad. Lägg till en lösennyckel på den här enheten så kan du logga in utan BankID nästa gång.',
            recoveryVerified: 'BankID har bekräftat vem du är.',
            recoveryEnrollHint: 'Skapa en lösennyckel på den här enheten för att komma tillbaka in på ditt konto.',
            accountRecovered: 'Din nya lösennyckel är klar och du är inloggad.',
            sessionsEndedOne: 'Din andra session avslutades.',
            sessionsEndedMany: 'Dina {count} andra sessioner avslutades.',
            passkeysRemovedOne: 'Din gamla lösennyckel togs bort.',
            passkeysRemovedMany: 'Dina {count} gamla lösennycklar togs bort.',
            passkeysKept: 'Dina gamla lösennycklar fungerar fortfarande: ta bort dem du har tappat bort nedan.',
            noAccountSignup: 'Inget konto är kopplat till det här BankID. Du kan skapa ett med BankID.',
            'bankid.no_account': 'Inget konto är kopplat till det här BankID.',
            'bankid.linked': 'BankID är nu kopplat till ditt konto.',
            'bankid.already_linked': 'BankID var redan kopplat till ditt konto.',
            'bankid.identity_linked_elsewhere': 'Det här BankID är kopplat till ett annat konto.',
            'bankid.account_has_identity': 'Ditt konto är kopplat till ett annat BankID.',
            'bankid.account_exists': 'Du har redan ett konto. Logga in i stället.',
            'bankid.risk_refused': 'BankID kunde inte användas den här gången. Använd en lösennyckel eller försök igen senare.',
            'bankid.result_delivered': 'Den här BankID-beställningen har redan använts. Börja om.',
            'bankid.order_not_found': 'BankID-beställningen är avslutad. Börja om.',
            'bankid.order_expired': 'BankID-beställningen är avslutad. Börja om.',
            'bankid.unavailable': 'BankID är inte tillgängligt just nu. Försök igen om en stund.',
            'bankid.already_in_progress': 'BankID används redan för dig. Slutför eller avbryt i BankID-appen och försök sedan igen.',
            'bankid.return_mismatch': 'Den här återkomsten från BankID hör inte till beställningen som startades här. Börja om.',
            'account.disabled': 'Kontot är avstängt.',
            method_disabled: 'Det är avstängt på den här servern.',
            accountHeading: 'Ditt konto',
            saveNames: 'Spara',
            namesSaved: 'Ditt namn sparades.',
            namesUnchanged: 'Inget att spara: namnen är som förut.',
            'user.invalid_username': 'Det användarnamnet går inte att använda. Välj ett annat.',
            'user.invalid_display_name': 'Det namnet går inte att använda. Skriv det på ett annat sätt.',
            'user.username_taken': 'Användarnamnet är upptaget. Välj ett annat.',
            downloadData: 'Ladda ner mina uppgifter',
            downloadHint: 'En JSON-fil med allt den här servern har om dig: ditt konto, lösennycklar, sessioner, BankID-kopplingen och loggen över vad som hänt med ditt konto.',
            dataDownloaded: 'Dina uppgifter laddades ner som {file}.',
            deleteAccount: 'Radera mitt konto',
            deleteHeading: 'Radera ditt konto?',
            deleteConsequence: 'Ditt konto, alla lösennycklar, alla sessioner och en eventuell BankID-koppling tas bort direkt, på alla enheter. Det går inte att ångra. Servern behåller loggen över vad som hänt med kontot, där det bara nämns med sitt id, under en begränsad tid.',
            deleteConfirmLabel: 'Jag förstår: radera mitt konto och allt i det',
            deleteForever: 'Radera mitt konto för gott',
            accountDeleted: 'Ditt konto raderades. Du är utloggad.',
            'review.deletion_refused': 'Det här kontot kan inte raderas här.',
            reauthPasskey: 'För att göra det, bekräfta att det är du med din lösennyckel…',
            reauthBankID: 'För att göra det, bekräfta att det är du: signera med BankID.',
            reauthOrderHeading: 'Bekräfta att det är du',
            reauthSignText: 'Jag bekräftar att det är jag, för att ändra mitt konto hos {host}.',
            reauthenticationIncomplete: 'Du bekräftade inte att det är du, så inget ändrades.',
            reauthenticationUnavailable: 'Logga ut och logga in igen först (det här kräver en ny inloggning).',
            'reauthentication_failed': 'Den lösennyckeln hör inte till ditt konto.',
            'bankid.identity_mismatch': 'Det BankID är inte det som är kopplat till ditt konto, så inget ändrades.',
          },
        };

        let lang = localStorage.getItem('portvakt.lang') ||
          (navigator.language.toLowerCase().startsWith('sv') ? 'sv' : 'en');

        /** The text for `key` in the current language, with `{name}` placeholders filled in. */
        function t(key, vars = {}) {
          const text = STRINGS[lang][key] ?? STRINGS.en[key] ?? key;
          return text.replace(/\{(\w+)\}/g, (_, name) => vars[name] ?? '');
        }

        // ---- Small DOM helpers. Text always goes in as textContent, never as HTML. ----
        const $ = (id) => document.getElementById(id);

        function el(tag, props = {}, ...children) {
          const node = Object.assign(document.createElement(tag), props);
          node.append(...children);
          return node;
        }

        /** Gives a node a text by key, kept when the language switches (applyLanguage redraws data-i18n). */
        function setI18n(node, key) {
          node.dataset.i18n = key;
          node.textContent = t(key);
        }

        function formatTime(iso) {
          if (!iso) return t('never');
          return new Intl.DateTimeFormat(lang, { dateStyle: 'medium', timeStyle: 'short' })
            .format(new Date(iso));
        }

        // The status line is an aria-live region: screen readers announce what is written there.
        // It keeps a function, not a string, so a language switch can redraw it.
        let statusText = () => '';
        function say(render, isError = false) {
          statusText = render;
          $('status').textContent = render();
          $('status').classList.toggle('error', isError);
        }
        const sayKey = (key, vars) => say(() => t(key, vars));

        /** Shows an error: a translated message by problem code when we have one, else the server's detail. */
        function sayError(error) {
          console.warn(error);
          say(() => {
            if (error.name === 'NotAllowedError' || error.name === 'AbortError') return t('cancelled');
            if (error.name === 'InvalidStateError') return t('alreadyRegistered');
            if (error.code && STRINGS[lang][error.code]) return t(error.code);
            return error.detail || t('failed');
          }, true);
        }

        // ---- The API: JSON in and out; failures are problem+json and become thrown errors. ----
        async function api(method, path, body) {
          const response = await fetch(path, {
            method,
            credentials: 'same-origin',
            // The page's language, not the browser's: BankID's messages come back in it.
            headers: { 'Accept-Language': lang, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
            body: body === undefined ? undefined : JSON.stringify(body),
          });
          if (response.status === 204) return null;
          const data = await response.json().catch(() => ({}));
          // Answers and refusals alike may carry what the password manager should hear.
          tellPasswordManager(data.signals ?? data.result?.signals);
          if (!response.ok) throw problem(response.status, data);
          return data;
        }

        /** A refusal as a thrown error: its status, problem code, detail and (re-authentication) methods. */
        function problem(status, data) {
          return Object.assign(new Error(data.title || `HTTP ${status}`), {
            status, code: data.code, detail: data.detail, methods: data.methods,
          });
        }

        // ---- The Signal API: the server's `signals` passed to the browser's password manager, so a
        // passkey removed here (or refused as unknown) stops being offered and new names show.
        // Feature-detected per method; a browser without them, or one that rejects, changes nothing.
        const SIGNALS = {
          unknownCredential: 'signalUnknownCredential',
          allAcceptedCredentials: 'signalAllAcceptedCredentials',
          currentUserDetails: 'signalCurrentUserDetails',
        };
        // The last argument sent per method, since the last sign-out: the same news twice (a
        // removal's answer, then the list reloaded after it) says nothing new.
        let signalled = {};

        function tellPasswordManager(signals) {
          if (!window.PublicKeyCredential || !signals || typeof signals !== 'object') return;
          for (const [key, method] of Object.entries(SIGNALS)) {
            const argument = signals[key];
            if (!argument || typeof PublicKeyCredential[method] !== 'function') continue;
            // Members sorted: two answers may write the same argument's members in other orders.
            const text = JSON.stringify(argument, Object.keys(argument).sort());
            if (signalled[key] === text) continue;
            signalled[key] = text;
            try {
              Promise.resolve(PublicKeyCredential[method](argument)).catch(() => {});
            } catch {
              // A synchronous throw (an old implementation) is as harmless as a rejection.
            }
          }
        }

        // ---- WebAuthn JSON <-> browser objects. ----
        // Browsers with WebAuthn Level 3 JSON support do it all: parse*OptionsFromJSON and toJSON().
        // For older browsers, the fallback converts the base64url fields by hand.
        const fromB64url = (text) =>
          Uint8Array.from(atob(text.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0)).buffer;

        function toB64url(buffer) {
          let binary = '';
          for (const byte of new Uint8Array(buffer)) binary += String.fromCharCode(byte);
          return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
        }

        const withIds = (list) => (list || []).map((c) => ({ ...c, id: fromB64url(c.id) }));

        function creationOptions(json) {
          if (PublicKeyCredential.parseCreationOptionsFromJSON) {
            return PublicKeyCredential.parseCreationOptionsFromJSON(json);
          }
          return {
            ...json,
            challenge: fromB64url(json.challenge),
            user: { ...json.user, id: fromB64url(json.user.id) },
            excludeCredentials: withIds(json.excludeCredentials),
          };
        }

        function requestOptions(json) {
          if (PublicKeyCredential.parseRequestOptionsFromJSON) {
            return PublicKeyCredential.parseRequestOptionsFromJSON(json);
          }
          return { ...json, challenge: fromB64url(json.challenge), allowCredentials: withIds(json.allowCredentials) };
        }

        /** RegistrationResponseJSON or AuthenticationResponseJSON, as the server expects. */
        function credentialJSON(credential) {
          if (typeof credential.toJSON === 'function') return credential.toJSON();
          const r = credential.response;
          const response = { clientDataJSON: toB64url(r.clientDataJSON) };
          if (r.attestationObject) {
            // Registration.
            response.attestationObject = toB64url(r.attestationObject);
            response.transports = r.getTransports ? r.getTransports() : [];
            if (r.getAuthenticatorData) response.authenticatorData = toB64url(r.getAuthenticatorData());
            if (r.getPublicKeyAlgorithm) response.publicKeyAlgorithm = r.getPublicKeyAlgorithm();
            const publicKey = r.getPublicKey && r.getPublicKey();
            if (publicKey) response.publicKey = toB64url(publicKey);
          } else {
            // Authentication.
            response.authenticatorData = toB64url(r.authenticatorData);
            response.signature = toB64url(r.signature);
            if (r.userHandle) response.userHandle = toB64url(r.userHandle);
          }
          return {
            id: credential.id,
            rawId: toB64url(credential.rawId),
            type: credential.type,
            authenticatorAttachment: credential.authenticatorAttachment ?? undefined,
            clientExtensionResults: credential.getClientExtensionResults(),
            response,
          };
        }

        // ---- The two ceremonies, each an initialize → browser → finalize round trip. ----

        /** Creates a passkey: a new account (`body` holds username and displayName) or, signed in, `{}`
         *  (`{ mediation: 'conditional' }` for an automatic upgrade, aborted through `signal`). */
        async function register(body, name, signal) {
          const { challengeId, publicKey } = await api('POST', '/v1/passkeys/registration/initialize', body);
          const credential = await navigator.credentials.create({
            publicKey: creationOptions(publicKey), ...(body.mediation ? { mediation: body.mediation, signal } : {}),
          });
          return api('POST', '/v1/passkeys/registration/finalize', {
            challengeId, credential: credentialJSON(credential), ...(name ? { name } : {}),
          });
        }

        /** Signs in: `{}` lets the user pick any passkey for this site, `{ username }` narrows it. */
        async function signIn(body) {
          const { challengeId, publicKey } = await api('POST', '/v1/passkeys/login/initialize', body);
          const credential = await navigator.credentials.get({ publicKey: requestOptions(publicKey) });
          return finishSignIn(challengeId, credential);
        }

        function finishSignIn(challengeId, credential) {
          return api('POST', '/v1/passkeys/login/finalize', { challengeId, credential: credentialJSON(credential) });
        }

        // ---- Re-authentication: what cannot be undone needs a recent proof that the user is here. ----
        // The server answers 403 reauthentication_required with the ways this user has (`methods`);
        // the page gives the proof inline (a passkey, else a BankID signature) and asks once more.
        // Every protected call goes through this one wrapper (Docs/signin-page.md).

        /** Runs `request` (one API call); on `reauthentication_required`, re-authenticates and runs it again, once. */
        async function withReauthentication(request) {
          try {
            return await request();
          } catch (error) {
            if (error.code !== 'reauthentication_required') throw error;
            await reauthenticate(error.methods ?? []);
            return request();
          }
        }

        async function reauthenticate(methods) {
          if (methods.includes('passkey') && webAuthn) {
            stopUpgrade(); // one WebAuthn request at a time
            sayKey('reauthPasskey');
            // The signed-in user's own passkeys only; this never opens a session (Docs/api.md#re-authentication).
            const { challengeId, publicKey } = await api('POST', '/v1/me/reauthenticate/initialize');
            const credential = await navigator.credentials.get({ publicKey: requestOptions(publicKey) });
            await api('POST', '/v1/me/reauthenticate/finalize', { challengeId, credential: credentialJSON(credential) });
            return;
          }
          if (methods.includes('bankid')) return signWithBankID();
          // No way to prove presence in this session (no passkey here, no linked BankID): a new sign-in is.
          throw Object.assign(new Error('reauthentication unavailable'), { code: 'reauthenticationUnavailable' });
        }

        // A BankID signature by the account's linked identity is a proof too. Its order runs in the
        // BankID panel like any other; the promise settles when the order ends. Another device only:
        // this device would leave the page for the BankID app and lose the request waiting here.
        let signing = null; // { resolve, reject } while a re-authentication's signature runs

        function signWithBankID() {
          return new Promise((resolve, reject) => {
            signing = { resolve, reject };
            sayKey('reauthBankID');
            startBankID('sign', 'other', { userVisibleData: t('reauthSignText', { host: location.host }) })
              .catch((error) => settleSigning(error));
          });
        }

        /** Ends the waiting re-authentication: `null` when signed, otherwise why it did not finish. */
        function settleSigning(error) {
          const waiting = signing;
          signing = null;
          if (!waiting) return false;
          if (error) waiting.reject(error);
          else waiting.resolve();
          return true;
        }

        const notConfirmed = () => Object.assign(new Error('not confirmed'), { code: 'reauthenticationIncomplete' });

        // Autofill sign-in (conditional mediation): a request waits quietly while the page shows the
        // form, and the browser offers this site's passkeys in the username field's autofill. Only one
        // WebAuthn request may be pending, so it is aborted before any other ceremony.
        let autofill = null;
        // A browser without WebAuthn still gets every BankID journey that needs no new passkey.
        const webAuthn = Boolean(window.PublicKeyCredential);

        async function startAutofill() {
          stopAutofill();
          if (!webAuthn || document.body.dataset.state !== 'signed-out') return;
          if (!(await PublicKeyCredential.isConditionalMediationAvailable?.())) return;
          const controller = new AbortController();
          autofill = controller;
          let challengeId, credential;
          try {
            const options = await api('POST', '/v1/passkeys/login/initialize', {});
            challengeId = options.challengeId;
            credential = await navigator.credentials.get({
              publicKey: requestOptions(options.publicKey), mediation: 'conditional', signal: controller.signal,
            });
          } catch {
            // Aborted by us, declined by the browser, or the server is not answering: autofill is a
            // convenience, so stay quiet; the button still works and says what is wrong.
            return;
          }
          autofill = null;
          // From here on the user picked a passkey, so failures are theirs to see.
          run(async () => {
            try {
              await finishSignIn(challengeId, credential);
            } catch (error) {
              startAutofill(); // a fresh challenge, so the user can pick again
              throw error;
            }
            await showAccount('signedIn');
          });
        }

        function stopAutofill() {
          autofill?.abort();
          autofill = null;
        }

        // Automatic passkey upgrade (conditional create): after a BankID sign-in where the server
        // suggests a passkey (its configuration allows one after BankID), the browser is asked to
        // make one without a prompt where it says it can (getClientCapabilities().conditionalCreate).
        // It decides whether the user has agreed to that; a refusal is quiet and the "Add a passkey"
        // button stays. The request may also stay pending (a browser with nothing to upgrade may
        // never answer), so it is aborted before any other ceremony. The server accepts this one
        // registration without user presence.
        let upgrade = null;

        async function upgradeToPasskey() {
          if (!webAuthn || typeof PublicKeyCredential.getClientCapabilities !== 'function') return;
          let capabilities;
          try {
            capabilities = await PublicKeyCredential.getClientCapabilities();
          } catch {
            return;
          }
          if (!capabilities?.conditionalCreate) return;
          const controller = new AbortController();
          upgrade = controller;
          try {
            await register({ mediation: 'conditional' }, null, controller.signal);
          } catch {
            return; // declined, not possible here, or aborted by another ceremony
          } finally {
            if (upgrade === controller) upgrade = null;
          }
          await loadPasskeys();
          sayKey('passkeyUpgraded');
        }

        function stopUpgrade() {
          upgrade?.abort();
          upgrade = null;
        }

        /** Runs a button's action: marks the page busy, reports failures, never leaves it stuck. */
        async function run(action) {
          document.body.setAttribute('aria-busy', 'true');
          try {
            await action();
          } catch (error) {
            sayError(error);
          } finally {
            document.body.removeAttribute('aria-busy');
          }
        }

        // ---- Views. ----

        // Switching views moves focus to the new view's heading, so keyboard and screen reader users
        // land where the page changed (not on the first load: the browser starts at the top anyway).
        function showSignedOut(messageKey, moveFocus = true) {
          stopUpgrade(); // a conditional create may wait for good: autofill needs the one request slot
          signalled = {}; // the next sign-in tells the password manager again
          document.body.dataset.state = 'signed-out';
          $('signed-in').hidden = true;
          $('signed-out').hidden = false;
          if (messageKey) sayKey(messageKey);
          if (moveFocus) $('signin-heading').focus();
          startAutofill();
        }

        /** Says a message given as a string key or as a function that renders it. */
        const sayMessage = (message) => say(typeof message === 'function' ? message : () => t(message));

        /** Loads the signed-in user and shows the account view; shows the signed-out view on 401. */
        async function showAccount(message, moveFocus = true) {
          let me;
          try {
            me = await api('GET', '/v1/me');
          } catch (error) {
            if (error.status === 401) return showSignedOut(null, moveFocus);
            throw error;
          }
          stopAutofill();
          document.body.dataset.state = 'signed-in';
          account = me.user;
          bankIDLink = me.bankId ?? null;
          sessionMethod = me.session.authMethod;
          drawAccountHeading();
          fillNames();
          drawBankIDLink();
          drawAddPasskey();
          $('signed-out').hidden = true;
          $('signed-in').hidden = false;
          await Promise.all([loadPasskeys(), loadSessions()]);
          if (message) sayMessage(message);
          if (moveFocus) $('account-heading').focus();
        }

        let account = null;
        let bankIDLink = null; // GET /v1/me's bankId: { linked, name }; null without BankID
        let sessionMethod = null; // GET /v1/me's session.authMethod: how this session signed in
        let passkeys = [];
        let sessions = [];

        function drawAccountHeading() {
          if (!account) return;
          $('account-heading').textContent = t('signedInAs', { name: account.displayName });
          $('account-username').textContent = t('usernameIs', { username: account.username ?? '' });
        }

        // ---- Your account: the names, a download of everything held, deletion. ----

        /** The name form shows what the server holds (after sign-in and after each save). */
        function fillNames() {
          $('account-username-field').value = account.username ?? '';
          $('account-display-field').value = account.displayName ?? '';
        }

        /** PATCH /v1/me with the names that changed; its signals reach the password manager in api(). */
        async function saveNames() {
          const wanted = { username: $('account-username-field').value.trim(), displayName: $('account-display-field').value.trim() };
          const changes = Object.fromEntries(Object.entries(wanted).filter(([key, value]) => value !== (account[key] ?? '')));
          if (!Object.keys(changes).length) return sayKey('namesUnchanged');
          account = (await api('PATCH', '/v1/me', changes)).user;
          drawAccountHeading();
          fillNames();
          sayKey('namesSaved');
        }

        /** GET /v1/me/export as a file: fetched (so a refusal, like the rate limit, is shown here), then
         *  handed to the browser as a download under the server's file name. */
        async function downloadData() {
          const response = await fetch('/v1/me/export', { credentials: 'same-origin', headers: { 'Accept-Language': lang } });
          if (!response.ok) throw problem(response.status, await response.json().catch(() => ({})));
          const disposition = response.headers.get('Content-Disposition') ?? '';
          const file = /filename="([^"]+)"/.exec(disposition)?.[1] ?? 'portvakt-account.json';
          const url = URL.createObjectURL(await response.blob());
          const link = el('a', { href: url, download: file, hidden: true });
          document.body.append(link);
          link.click();
          link.remove();
          setTimeout(() => URL.revokeObjectURL(url), 60000); // the download has started by then
          sayKey('dataDownloaded', { file });
        }

        // The deletion's confirmation is a modal <dialog>: focus moves into it, Escape cancels, and the
        // button deletes only once the box saying what it means is ticked.
        function openDeleteDialog() {
          $('delete-confirm').checked = false;
          $('delete-dialog').showModal();
          $('delete-confirm').focus();
        }

        function closeDeleteDialog() {
          $('delete-dialog').close();
        }

        async function deleteAccount() {
          closeDeleteDialog();
          await withReauthentication(() => api('DELETE', '/v1/me'));
          // The server cleared the cookie and ended every session of the account.
          forgetAccount();
          showSignedOut('accountDeleted');
        }

        function forgetAccount() {
          account = null;
          passkeys = [];
          sessions = [];
        }

        async function loadPasskeys() {
          passkeys = (await api('GET', '/v1/me/passkeys')).passkeys;
          drawPasskeys();
        }

        async function loadSessions() {
          sessions = (await api('GET', '/v1/me/sessions')).sessions;
          drawSessions();
        }

        /** A definition list of label/value pairs, for the details of a passkey or session. */
        function details(pairs) {
          const list = el('dl');
          for (const [label, value] of pairs) {
            list.append(el('dt', { textContent: label }), el('dd', { textContent: value }));
          }
          return list;
        }

        function drawPasskeys() {
          $('passkeys').replaceChildren(...passkeys.map((passkey) => {
            const name = passkey.name || t('unnamed');
            const item = el('li', { className: 'card' });
            item.dataset.id = passkey.id;
            const rename = el('button', { type: 'button', textContent: t('rename'), className: 'rename' });
            const remove = el('button', { type: 'button', textContent: t('remove'), className: 'remove' });
            // The button names say which passkey they act on, for screen readers listing buttons.
            rename.setAttribute('aria-label', `${t('rename')}: ${name}`);
            remove.setAttribute('aria-label', `${t('remove')}: ${name}`);
            rename.addEventListener('click', () => openRename(item, passkey));
            remove.addEventListener('click', () => run(async () => {
              await withReauthentication(() => api('DELETE', `/v1/me/passkeys/${encodeURIComponent(passkey.id)}`));
              await loadPasskeys();
              sayKey('passkeyRemoved');
              $('passkeys-heading').focus();
            }));
            item.append(
              el('h4', { textContent: name, className: 'name' }),
              details([
                [t('provider'), passkey.provider || t('unknownProvider')],
                [t('created'), formatTime(passkey.createdAt)],
                [t('lastUsed'), formatTime(passkey.lastUsedAt)],
              ]),
              el('div', { className: 'actions' }, rename, remove),
            );
            return item;
          }));
        }

        /** Swaps a passkey's buttons for a small rename form; focus goes to the field, then back. */
        function openRename(item, passkey) {
          const name = passkey.name || t('unnamed');
          const input = el('input', { id: `rename-${passkey.id}`, value: passkey.name ?? '', required: true });
          const form = el('form', { className: 'rename-form' },
            el('label', { htmlFor: input.id, textContent: t('renameLabel', { name }) }), input,
            el('button', { type: 'submit', textContent: t('save') }),
            el('button', { type: 'button', textContent: t('cancel'), className: 'cancel' }));
          const actions = item.querySelector('.actions');
          actions.replaceWith(form);
          const close = () => item.querySelector('.rename')?.focus();
          form.querySelector('.cancel').addEventListener('click', () => { form.replaceWith(actions); close(); });
          form.addEventListener('submit', (event) => {
            event.preventDefault();
            run(async () => {
              await api('PATCH', `/v1/me/passkeys/${encodeURIComponent(passkey.id)}`, { name: input.value.trim() });
              await loadPasskeys();
              sayKey('passkeyRenamed');
              $('passkeys').querySelector(`[data-id="${CSS.escape(passkey.id)}"] .rename`)?.focus();
            });
          });
          input.focus();
          input.select();
        }

        /** "Firefox on Linux" from a User-Agent header: enough to tell sessions apart. */
        function describeClient(userAgent = '') {
          const browser = ['Edg', 'Firefox', 'Chrome', 'Safari'].find((name) => userAgent.includes(`${name}/`));
          const systems = ['Android', 'iPhone', 'iPad', 'Mac OS X', 'Windows', 'Linux'];
          const system = systems.find((name) => userAgent.includes(name));
          if (!browser) return userAgent;
          return system ? `${browser === 'Edg' ? 'Edge' : browser} · ${system}` : browser;
        }

        function drawSessions() {
          $('end-other-sessions').hidden = !sessions.some((session) => !session.current);
          $('sessions').replaceChildren(...sessions.map((session) => {
            const item = el('li', { className: 'card' });
            item.dataset.id = session.id;
            const client = describeClient(session.userAgent) || session.clientKind;
            const title = t('sessionTitle', { client, method: session.authMethod });
            const heading = el('h4', { textContent: title });
            if (session.current) {
              item.classList.add('current');
              heading.append(' ', el('strong', { textContent: `(${t('thisSession')})` }));
            }
            const end = el('button', { type: 'button', textContent: t('endSession'), className: 'end-session' });
            end.setAttribute('aria-label', `${t('endSession')}: ${title}`);
            end.addEventListener('click', () => run(async () => {
              await api('DELETE', `/v1/me/sessions/${encodeURIComponent(session.id)}`);
              if (session.current) return showSignedOut('signedOut');
              await loadSessions();
              sayKey('sessionEnded');
              $('sessions-heading').focus();
            }));
            item.append(heading, details([
              [t('created'), formatTime(session.createdAt)],
              [t('lastSeen'), formatTime(session.lastSeenAt)],
              [t('expires'), formatTime(session.expiresAt)],
              [t('address'), session.ipAddress || '–'],
            ]), el('div', { className: 'actions' }, end));
            return item;
          }));
        }

        // ---- BankID: start an order, poll it until it ends, act on its result. ----
        // Another device: an animated QR code, redrawn from every poll (the server answers with the code
        // of the current second). This device: the BankID app opens from the launch link and, when done,
        // sends the user back to this page with ?nonce=…; only a poll carrying that nonce gets the result.
        const QR_SECONDS = 30; // a BankID QR code stops working 30 s after the order starts
        const PENDING_ORDER = 'portvakt.bankid'; // localStorage: the same-device order BankID returns to
        const ORDER_HEADINGS = {
          login: 'bankidLoginHeading', signup: 'bankidSignupHeading', recovery: 'recoveryOrderHeading', link: 'linkHeading',
          sign: 'reauthOrderHeading',
        };
        let methods = {}; // GET /v1/methods: which journeys this server offers
        let order = null; // the running order: { id, intent, device, nonce?, startedAt, announced?, timer? }
        let lastStart = null; // { intent, device } for "Start again"

        const orderPath = (id) => `/v1/bankid/orders/${encodeURIComponent(id)}`;

        async function startBankID(intent, device, extra = {}) {
          stopAutofill();
          cancelBankID();
          lastStart = { intent, device };
          openBankID(intent);
          setBankIDMessage({ key: 'bankidStarting' });
          let started;
          try {
            started = await api('POST', '/v1/bankid/orders', { intent, device, ...extra });
          } catch (error) {
            closeBankID();
            throw error;
          }
          order = { id: started.orderId, intent, device, startedAt: Date.now() };
          if (device === 'same') {
            // Remembered before leaving: BankID brings the user back in a new page load (maybe a new tab).
            localStorage.setItem(PENDING_ORDER, JSON.stringify({ id: order.id, intent }));
            order.launchUrl = started.launchUrl;
            $('bankid-launch').hidden = false;
            location.assign(started.launchUrl);
          } else {
            drawQR(started.qrData, started.qrSvg);
            drawCountdown(QR_SECONDS);
          }
          poll(); // at once: the first poll brings BankID's message
        }

        /** Back from the BankID app (?nonce=…): resumes the same-device order this browser started. */
        function resumeBankID() {
          const url = new URL(location.href);
          const nonce = url.searchParams.get('nonce');
          if (!nonce) return;
          url.searchParams.delete('nonce');
          history.replaceState(null, '', url);
          const pending = JSON.parse(localStorage.getItem(PENDING_ORDER) ?? 'null');
          if (!pending) return;
          openBankID(pending.intent);
          lastStart = { intent: pending.intent, device: 'same' };
          order = { id: pending.id, intent: pending.intent, device: 'same', nonce, startedAt: Date.now() };
          poll();
        }

        async function poll() {
          const current = order;
          if (!current) return;
          let status;
          try {
            const query = current.nonce ? `?nonce=${encodeURIComponent(current.nonce)}` : '';
            status = await api('GET', orderPath(current.id) + query);
          } catch (error) {
            if (order !== current) return;
            endBankID({}, error); // a re-authentication waiting on this order fails with the same error
            sayError(error);
            return;
          }
          if (order !== current) return; // cancelled or replaced while the answer was on its way
          if (status.status === 'pending') {
            showPending(status);
            if (order === current) current.timer = setTimeout(poll, current.device === 'other' ? 1000 : 2000);
          } else if (status.status === 'complete') {
            closeBankID();
            run(() => finishBankID(status.result));
          } else {
            endBankID({ text: status.message?.text }); // failed or cancelled: BankID's message says why
          }
        }

        function showPending(status) {
          const text = status.awaitingReturn ? t('awaitingReturn') : (status.message?.text ?? '');
          // Written only when it changes, so the live region announces each message once.
          if ($('bankid-message').textContent !== text) setBankIDMessage({ text });
          // The code is shown until the app has read it (then the hint moves on from outstandingTransaction).
          const scanning = status.qrData && (status.hintCode ?? 'outstandingTransaction') === 'outstandingTransaction';
          if (!scanning) return hideQR();
          const left = QR_SECONDS - Math.floor((Date.now() - order.startedAt) / 1000);
          if (left <= 0) {
            // Nobody can scan it any more: end the order and offer a new one.
            api('DELETE', orderPath(order.id)).catch(() => {});
            return endBankID({ key: 'qrExpired' });
          }
          drawQR(status.qrData, status.qrSvg);
          drawCountdown(left);
        }

        function drawQR(qrData, qrSvg) {
          const image = $('bankid-qr-image');
          // Our server's SVG as an image: it cannot run script or reach into the page (img-src allows data:).
          if (qrSvg) image.src = `data:image/svg+xml;base64,${btoa(qrSvg)}`;
          image.dataset.qr = qrData; // the code's text, for tests and for clients that draw their own
          $('bankid-qr').hidden = $('bankid-qr-hint').hidden = false;
        }

        /** The countdown: visible every second; read to screen readers every 10 s, not every second. */
        function drawCountdown(left) {
          $('bankid-countdown').textContent = t('qrSecondsLeft', { seconds: left });
          const tens = Math.ceil(left / 10);
          if (order.announced !== tens) {
            order.announced = tens;
            $('bankid-countdown-live').textContent = t('qrSecondsLeft', { seconds: left });
          }
        }

        function hideQR() {
          setFullScreen(false);
          $('bankid-qr').hidden = $('bankid-qr-hint').hidden = true;
          $('bankid-countdown').textContent = $('bankid-countdown-live').textContent = '';
        }

        function setFullScreen(on) {
          $('bankid-qr').setAttribute('aria-pressed', String(on));
        }

        /** Shows the panel for a new order instead of the current view. */
        function openBankID(intent) {
          setI18n($('bankid-heading'), ORDER_HEADINGS[intent]);
          setI18n($('bankid-cancel'), 'cancel');
          setBankIDMessage({ text: '' });
          hideQR();
          $('bankid-launch').hidden = $('bankid-restart').hidden = true;
          $('signed-in').hidden = $('signed-out').hidden = true;
          $('bankid').hidden = false;
          $('bankid-heading').focus();
        }

        /** The order ended without a result: says why and offers to start again. */
        function endBankID(message, error = notConfirmed()) {
          forgetOrder();
          hideQR();
          $('bankid-launch').hidden = true;
          if (message.text || message.key) setBankIDMessage(message);
          // A re-authentication's signature is not started again from here: the act itself is.
          $('bankid-restart').hidden = settleSigning(error);
          setI18n($('bankid-cancel'), 'close');
          ($('bankid-restart').hidden ? $('bankid-cancel') : $('bankid-restart')).focus();
        }

        /** The panel's message: BankID's text from the server (in the language of the request that
         *  brought it), or one of the page's own by key (redrawn when the language changes). */
        function setBankIDMessage({ text = '', key = null }) {
          const node = $('bankid-message');
          if (key) return setI18n(node, key);
          delete node.dataset.i18n;
          node.textContent = text;
        }

        /** Hides the panel and shows the view it replaced. */
        function closeBankID() {
          forgetOrder();
          hideQR();
          $('bankid').hidden = true;
          $(document.body.dataset.state).hidden = false; // the section named after the state
        }

        function forgetOrder() {
          clearTimeout(order?.timer);
          if (order?.device === 'same') localStorage.removeItem(PENDING_ORDER);
          order = null;
        }

        /** Cancels the running order at BankID, if any (nobody waits for the answer). */
        function cancelBankID() {
          if (order) api('DELETE', orderPath(order.id)).catch(() => {});
          forgetOrder();
        }

        /** What a completed order means for the page, by its result code (Docs/api.md#bankid-orders). */
        async function finishBankID(result) {
          if (signing) {
            // A re-authentication: only the account's own signature counts (bankid.identity_mismatch otherwise).
            if (result.code !== 'bankid.signed') settleSigning(Object.assign(new Error(result.code), { code: result.code }));
            else settleSigning(null);
            return;
          }
          switch (result.code) {
            case 'bankid.signed_in':
              // A passkey is suggested only where this browser can make one.
              await showAccount(result.suggestPasskey && webAuthn ? 'bankidSuggestPasskey' : 'signedIn');
              if (result.suggestPasskey) upgradeToPasskey();
              return;
            case 'bankid.account_created':
              await showAccount(result.suggestPasskey && webAuthn ? 'bankidAccountCreated' : 'accountCreated');
              if (result.suggestPasskey) upgradeToPasskey();
              return;
            case 'bankid.linked':
            case 'bankid.already_linked':
              await showAccount(result.code, false);
              return $('bankid-account-heading').focus();
            case 'bankid.recovery_verified':
              // A one-time enrollment token: the user creates the new passkey with the enrollment form.
              return offerEnrollment(result.enrollmentToken, 'recoveryEnrollHint', 'recoveryVerified');
            case 'bankid.no_account':
              if (result.signupAvailable && methods.bankid?.signup) {
                sayKey('noAccountSignup');
                return $('bankid-signup-heading').focus();
              }
          }
          // A refusal: its code says what happened (sayError translates it).
          throw Object.assign(new Error(result.code), { code: result.code });
        }

        /** "Your new passkey is ready… 2 other sessions were ended." What a recovery revoked, in words. */
        function recoverySummary({ sessionsRevoked, passkeysRevoked }) {
          const parts = [t('accountRecovered')];
          if (sessionsRevoked === 1) parts.push(t('sessionsEndedOne'));
          if (sessionsRevoked > 1) parts.push(t('sessionsEndedMany', { count: sessionsRevoked }));
          if (passkeysRevoked === 1) parts.push(t('passkeysRemovedOne'));
          if (passkeysRevoked > 1) parts.push(t('passkeysRemovedMany', { count: passkeysRevoked }));
          if (!passkeysRevoked && passkeys.length > 1) parts.push(t('passkeysKept'));
          return parts.join(' ');
        }

        /** Shows the ways in this server offers (GET /v1/methods) that this browser can use. */
        function drawChoices() {
          const passkey = webAuthn && Boolean(methods.passkey?.enabled);
          const bankid = methods.bankid ?? {};
          $('signin-form').hidden = !passkey;
          $('signup-form').hidden = !(passkey && methods.passkey.signup);
          drawAddPasskey();
          $('bankid-login').hidden = !bankid.login;
          $('bankid-signup').hidden = !bankid.signup;
          $('signup-heading').hidden = $('signup-form').hidden && $('bankid-signup').hidden;
          // Recovery ends with a new passkey: only where one can be made.
          $('bankid-recovery').hidden = !(bankid.recovery && passkey);
        }

        /** "Add a passkey": where this browser can make one, and not in a session BankID opened unless
         *  the server lets one add a passkey (BankID's rule against ID switching, Docs/bankid.md). */
        function drawAddPasskey() {
          const passkey = webAuthn && Boolean(methods.passkey?.enabled);
          const afterBankID = sessionMethod !== 'bankid' || Boolean(methods.bankid?.passkeyAfterBankID);
          $('add-passkey-form').hidden = !(passkey && afterBankID);
        }

        /** The account's BankID line: linked (with the name BankID gave) or not, and the link buttons. */
        function drawBankIDLink() {
          const canLink = Boolean(methods.bankid?.link);
          $('bankid-account').hidden = !bankIDLink || (!bankIDLink.linked && !canLink);
          if (!bankIDLink) return;
          $('bankid-link-state').textContent = bankIDLink.linked
            ? t('bankidLinked', { name: bankIDLink.name }) : t('bankidNotLinked');
          $('bankid-link').hidden = bankIDLink.linked || !canLink;
        }

        // ---- Enrollment with a one-time token: from an administrator's link or a BankID recovery. ----
        let enrollToken = null;

        function offerEnrollment(token, hintKey, messageKey) {
          enrollToken = token;
          setI18n($('enroll-hint'), hintKey);
          $('enroll-form').hidden = false;
          if (messageKey) sayKey(messageKey);
          $('enroll-heading').focus();
        }

        /** Writes every static text (elements marked data-i18n) and redraws the dynamic parts. */
        function applyLanguage() {
          document.documentElement.lang = lang;
          document.title = t('title');
          for (const node of document.querySelectorAll('[data-i18n]')) node.textContent = t(node.dataset.i18n);
          const toggle = $('language');
          toggle.textContent = t('otherLanguage');
          toggle.lang = lang === 'sv' ? 'en' : 'sv';
          $('bankid-qr').setAttribute('aria-label', t('qrFullScreen'));
          $('bankid-qr-image').alt = t('qrAlt');
          drawAccountHeading();
          drawBankIDLink();
          drawPasskeys();
          drawSessions();
          $('status').textContent = statusText();
        }

        // ---- Wiring. ----
        document.addEventListener('DOMContentLoaded', () => {
          applyLanguage();

          $('language').addEventListener('click', () => {
            lang = lang === 'sv' ? 'en' : 'sv';
            localStorage.setItem('portvakt.lang', lang);
            applyLanguage();
          });

          // An enrollment link (#enroll=<one-time token>, from an administrator): offer to create a
          // passkey for that account. The fragment never reaches a server; it is also taken out of
          // the address bar and history at once, since the token is a secret until it is used.
          const linkToken = new URLSearchParams(location.hash.slice(1)).get('enroll');
          if (linkToken) {
            history.replaceState(null, '', location.pathname + location.search);
            if (webAuthn) {
              enrollToken = linkToken;
              $('enroll-form').hidden = false;
            }
          }
          $('enroll-form').addEventListener('submit', (event) => {
            event.preventDefault();
            stopAutofill();
            sayKey('working');
            run(async () => {
              const enrolled = await register({ enrollmentToken: enrollToken });
              enrollToken = null;
              $('enroll-form').hidden = true;
              // After a recovery the answer says which sessions and passkeys the policy revoked.
              const recovery = enrolled.recovery;
              await showAccount(recovery ? () => recoverySummary(recovery) : 'passkeyEnrolled');
            });
          });

          // Every BankID button names its journey and device: data-intent and data-device.
          document.addEventListener('click', (event) => {
            const button = event.target.closest('button[data-intent]');
            if (button) run(() => startBankID(button.dataset.intent, button.dataset.device));
          });
          $('bankid-qr').addEventListener('click', () => {
            setFullScreen($('bankid-qr').getAttribute('aria-pressed') !== 'true');
          });
          document.addEventListener('keydown', (event) => {
            if (event.key === 'Escape') setFullScreen(false);
          });
          $('bankid-launch').addEventListener('click', () => order?.launchUrl && location.assign(order.launchUrl));
          $('bankid-restart').addEventListener('click', () => run(() => startBankID(lastStart.intent, lastStart.device)));
          $('bankid-cancel').addEventListener('click', () => {
            const running = Boolean(order);
            cancelBankID();
            closeBankID();
            settleSigning(notConfirmed());
            if (running) sayKey('bankidCancelled');
            $(document.body.dataset.state === 'signed-in' ? 'account-heading' : 'signin-heading').focus();
            startAutofill(); // signed out: offer the passkeys in autofill again
          });

          $('signin-form').addEventListener('submit', (event) => {
            event.preventDefault();
            const username = $('signin-username').value.trim();
            stopAutofill();
            sayKey('working');
            run(async () => {
              try {
                await signIn(username ? { username } : {});
              } catch (error) {
                startAutofill();
                throw error;
              }
              await showAccount('signedIn');
            });
          });

          $('signup-form').addEventListener('submit', (event) => {
            event.preventDefault();
            stopAutofill();
            sayKey('working');
            run(async () => {
              try {
                await register({
                  username: $('signup-username').value.trim(),
                  displayName: $('signup-display').value.trim(),
                });
              } catch (error) {
                startAutofill();
                throw error;
              }
              event.target.reset();
              await showAccount('accountCreated');
            });
          });

          // Every other session at once (a lost or shared device): it needs a recent proof of presence.
          $('end-other-sessions').addEventListener('click', () => run(async () => {
            const { revoked } = await withReauthentication(() => api('DELETE', '/v1/me/sessions'));
            await loadSessions();
            if (revoked === 0) sayKey('noOtherSessions');
            else sayKey(revoked === 1 ? 'sessionsEndedOne' : 'sessionsEndedMany', { count: revoked });
            $('sessions-heading').focus();
          }));

          $('add-passkey-form').addEventListener('submit', (event) => {
            event.preventDefault();
            stopUpgrade(); // one WebAuthn request at a time: the button wins
            sayKey('working');
            run(async () => {
              await register({}, $('new-passkey-name').value.trim());
              event.target.reset();
              await loadPasskeys();
              sayKey('passkeyAdded');
              $('passkeys-heading').focus();
            });
          });

          $('signout').addEventListener('click', () => run(async () => {
            await api('POST', '/v1/logout');
            forgetAccount();
            showSignedOut('signedOut');
          }));

          $('names-form').addEventListener('submit', (event) => {
            event.preventDefault();
            run(saveNames);
          });
          $('download-data').addEventListener('click', () => run(downloadData));
          $('delete-account').addEventListener('click', openDeleteDialog);
          $('delete-cancel').addEventListener('click', () => {
            closeDeleteDialog();
            $('delete-account').focus();
          });
          // Escape closes a modal dialog by itself (the cancel event); focus goes back to the button.
          $('delete-dialog').addEventListener('close', () => {
            if (document.body.dataset.state === 'signed-in' && !$('delete-account').contains(document.activeElement)) {
              $('delete-account').focus();
            }
          });
          $('delete-form').addEventListener('submit', (event) => {
            event.preventDefault();
            if (!$('delete-confirm').checked) return $('delete-confirm').focus();
            run(deleteAccount);
          });

          sayKey('loading');
          run(async () => {
            methods = await api('GET', '/v1/methods');
            drawChoices();
            await showAccount(null, false);
            if (!webAuthn) {
              say(() => t('noWebAuthn') + (methods.bankid?.login ? ' ' + t('noWebAuthnBankID') : ''));
            }
            else if (statusText() === t('loading')) say(() => '');
            resumeBankID();
          });
        });
        """#
}
