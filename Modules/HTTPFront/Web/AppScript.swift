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
            working: 'Waiting for your passkey…',
            loading: 'Loading…',
            signedIn: 'You are signed in.',
            signedOut: 'You are signed out.',
            accountCreated: 'Your account is ready and you are signed in.',
            passkeyAdded: 'The passkey was added.',
            passkeyRenamed: 'The passkey was renamed.',
            passkeyRemoved: 'The passkey was removed.',
            sessionEnded: 'The session was ended.',
            noWebAuthn: 'This browser cannot use passkeys.',
            cancelled: 'The passkey request was cancelled or timed out.',
            alreadyRegistered: 'This device already holds a passkey for your account.',
            failed: 'Something went wrong. Please try again.',
            'passkey.last_passkey': 'This is your last passkey. Add another one before you remove it.',
            'session.missing': 'You are not signed in.',
            rate_limited: 'Too many attempts. Wait a moment and try again.',
            enrollHeading: 'Set up your passkey',
            enrollHint: 'You were sent a one-time link. Create a passkey on this device to get into your account.',
            enrollButton: 'Create my passkey',
            passkeyEnrolled: 'Your passkey is ready and you are signed in.',
            'enrollment.invalid': 'This link has been used or has expired. Ask for a new one.',
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
            working: 'Väntar på din lösennyckel…',
            loading: 'Laddar…',
            signedIn: 'Du är inloggad.',
            signedOut: 'Du är utloggad.',
            accountCreated: 'Ditt konto är klart och du är inloggad.',
            passkeyAdded: 'Lösennyckeln lades till.',
            passkeyRenamed: 'Lösennyckeln fick ett nytt namn.',
            passkeyRemoved: 'Lösennyckeln togs bort.',
            sessionEnded: 'Sessionen avslutades.',
            noWebAuthn: 'Den här webbläsaren kan inte använda lösennycklar.',
            cancelled: 'Begäran om lösennyckel avbröts eller tog för lång tid.',
            alreadyRegistered: 'Den här enheten har redan en lösennyckel för ditt konto.',
            failed: 'Något gick fel. Försök igen.',
            'passkey.last_passkey': 'Det här är din sista lösennyckel. Lägg till en till innan du tar bort den.',
            'session.missing': 'Du är inte inloggad.',
            rate_limited: 'För många försök. Vänta en stund och försök igen.',
            enrollHeading: 'Skapa din lösennyckel',
            enrollHint: 'Du har fått en engångslänk. Skapa en lösennyckel på den här enheten för att komma in på ditt konto.',
            enrollButton: 'Skapa min lösennyckel',
            passkeyEnrolled: 'Din lösennyckel är klar och du är inloggad.',
            'enrollment.invalid': 'Länken har redan använts eller har gått ut. Be om en ny.',
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
            headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
            body: body === undefined ? undefined : JSON.stringify(body),
          });
          if (response.status === 204) return null;
          const data = await response.json().catch(() => ({}));
          if (!response.ok) {
            throw Object.assign(new Error(data.title || `HTTP ${response.status}`), {
              status: response.status, code: data.code, detail: data.detail,
            });
          }
          return data;
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

        /** Creates a passkey: a new account (`body` holds username and displayName) or, signed in, `{}`. */
        async function register(body, name) {
          const { challengeId, publicKey } = await api('POST', '/v1/passkeys/registration/initialize', body);
          const credential = await navigator.credentials.create({ publicKey: creationOptions(publicKey) });
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

        // Autofill sign-in (conditional mediation): a request waits quietly while the page shows the
        // form, and the browser offers this site's passkeys in the username field's autofill. Only one
        // WebAuthn request may be pending, so it is aborted before any other ceremony.
        let autofill = null;

        async function startAutofill() {
          stopAutofill();
          if (document.body.dataset.state !== 'signed-out') return;
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
          document.body.dataset.state = 'signed-out';
          $('signed-in').hidden = true;
          $('signed-out').hidden = false;
          if (messageKey) sayKey(messageKey);
          if (moveFocus) $('signin-heading').focus();
          startAutofill();
        }

        /** Loads the signed-in user and shows the account view; shows the signed-out view on 401. */
        async function showAccount(messageKey, moveFocus = true) {
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
          drawAccountHeading();
          $('signed-out').hidden = true;
          $('signed-in').hidden = false;
          await Promise.all([loadPasskeys(), loadSessions()]);
          if (messageKey) sayKey(messageKey);
          if (moveFocus) $('account-heading').focus();
        }

        let account = null;
        let passkeys = [];
        let sessions = [];

        function drawAccountHeading() {
          if (!account) return;
          $('account-heading').textContent = t('signedInAs', { name: account.displayName });
          $('account-username').textContent = t('usernameIs', { username: account.username ?? '' });
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
              await api('DELETE', `/v1/me/passkeys/${encodeURIComponent(passkey.id)}`);
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

        /** Writes every static text (elements marked data-i18n) and redraws the dynamic parts. */
        function applyLanguage() {
          document.documentElement.lang = lang;
          document.title = t('title');
          for (const node of document.querySelectorAll('[data-i18n]')) node.textContent = t(node.dataset.i18n);
          const toggle = $('language');
          toggle.textContent = t('otherLanguage');
          toggle.lang = lang === 'sv' ? 'en' : 'sv';
          drawAccountHeading();
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

          if (!window.PublicKeyCredential) {
            $('signed-out').hidden = false;
            sayKey('noWebAuthn');
            return;
          }

          // An enrollment link (#enroll=<one-time token>, from an administrator): offer to create a
          // passkey for that account. The fragment never reaches a server; it is also taken out of
          // the address bar and history at once, since the token is a secret until it is used.
          const enrollToken = new URLSearchParams(location.hash.slice(1)).get('enroll');
          if (enrollToken) {
            history.replaceState(null, '', location.pathname + location.search);
            $('enroll-form').hidden = false;
            $('enroll-form').addEventListener('submit', (event) => {
              event.preventDefault();
              stopAutofill();
              sayKey('working');
              run(async () => {
                await register({ enrollmentToken: enrollToken });
                $('enroll-form').hidden = true;
                await showAccount('passkeyEnrolled');
              });
            });
          }

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

          $('add-passkey-form').addEventListener('submit', (event) => {
            event.preventDefault();
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
            account = null;
            passkeys = [];
            sessions = [];
            showSignedOut('signedOut');
          }));

          sayKey('loading');
          run(async () => {
            await showAccount(null, false);
            if (statusText() === t('loading')) say(() => '');
          });
        });
        """#
}
