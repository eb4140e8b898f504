import HTTPEngine

// The text below is served byte for byte; edit it here (Docs/signin-page.md).

/// The sign-in page's style sheet, served as `/assets/app.<hash>.css`.
enum AppStyle {
    static let source = #"""
        /* Portvakt's sign-in page: system fonts, light and dark, visible focus, nothing loaded from outside. */
        :root {
          color-scheme: light dark;
          --fg: #1b1f24;
          --muted: #57606a;
          --bg: #ffffff;
          --card: #f6f8fa;
          --line: #d0d7de;
          --accent: #0a5cc2;
          --error: #b3261e;
        }
        @media (prefers-color-scheme: dark) {
          :root {
            --fg: #e6edf3;
            --muted: #9da7b3;
            --bg: #0d1117;
            --card: #161b22;
            --line: #30363d;
            --accent: #6cb6ff;
            --error: #ff8a80;
          }
        }
        * { box-sizing: border-box; }
        body {
          margin: 0;
          font: 1rem/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
          color: var(--fg);
          background: var(--bg);
        }
        header, main { max-width: 40rem; margin: 0 auto; padding: 1rem; }
        header { display: flex; justify-content: space-between; align-items: center; }
        h1 { font-size: 1.5rem; margin: 0; }
        h2 { font-size: 1.25rem; margin: 1.5rem 0 0.5rem; }
        h3 { font-size: 1.1rem; margin: 1.5rem 0 0.5rem; }
        h4 { font-size: 1rem; margin: 0 0 0.25rem; overflow-wrap: anywhere; }
        [hidden] { display: none !important; }
        form { display: grid; gap: 0.5rem; margin: 0 0 1rem; }
        label { font-weight: 600; }
        input {
          font: inherit;
          padding: 0.5rem;
          border: 1px solid var(--line);
          border-radius: 0.375rem;
          background: var(--bg);
          color: var(--fg);
        }
        button {
          font: inherit;
          padding: 0.5rem 1rem;
          border: 1px solid var(--accent);
          border-radius: 0.375rem;
          background: var(--accent);
          color: var(--bg);
          cursor: pointer;
          justify-self: start;
        }
        button.remove, button.cancel, button.end-session, #signout, #language {
          background: transparent;
          color: var(--accent);
        }
        :focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
        [tabindex="-1"]:focus { outline: none; }
        .hint { color: var(--muted); margin: 0; font-size: 0.9rem; }
        #status { min-height: 1.5rem; margin: 0; }
        #status.error { color: var(--error); font-weight: 600; }
        ul { list-style: none; padding: 0; margin: 0 0 1rem; display: grid; gap: 0.75rem; }
        .card { background: var(--card); border: 1px solid var(--line); border-radius: 0.5rem; padding: 0.75rem; }
        .card.current { border-color: var(--accent); }
        dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.125rem 1rem; margin: 0 0 0.5rem; }
        dt { color: var(--muted); }
        dd { margin: 0; }
        .actions, .rename-form { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: end; }
        .rename-form label { flex-basis: 100%; }
        .account-bar { display: flex; flex-wrap: wrap; justify-content: space-between; align-items: center; gap: 0.5rem; }
        /* Read by screen readers, not shown: the QR code's countdown, every 10 s. */
        .visually-hidden {
          position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0;
          overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0;
        }
        /* The QR code stays black on white in either colour scheme, so the BankID app can read it. */
        #bankid-qr { background: #ffffff; border-color: var(--line); padding: 0.75rem; }
        #bankid-qr img { display: block; width: 14rem; height: 14rem; }
        #bankid-qr[aria-pressed="true"] {
          position: fixed; inset: 0; z-index: 1; width: 100%;
          display: grid; place-items: center; border: 0; border-radius: 0;
        }
        #bankid-qr[aria-pressed="true"] img { width: min(90vw, 90vh); height: min(90vw, 90vh); }
        #bankid-message { font-weight: 600; min-height: 1.5rem; }
        /* What cannot be undone looks different from the rest, in red. */
        button.danger { background: transparent; color: var(--error); border-color: var(--error); }
        button.danger-solid { background: var(--error); border-color: var(--error); color: var(--bg); }
        dialog {
          max-width: min(34rem, calc(100vw - 2rem)); padding: 1rem 1.25rem;
          color: var(--fg); background: var(--bg); border: 1px solid var(--line); border-radius: 0.5rem;
        }
        #download-hint { margin-bottom: 1rem; }
        dialog::backdrop { background: rgb(0 0 0 / 0.5); }
        dialog h3 { margin-top: 0; }
        .check { display: flex; gap: 0.5rem; align-items: start; }
        .check input { margin-top: 0.3rem; width: 1.1rem; height: 1.1rem; }
        .check label { font-weight: 600; }
        """#
}
