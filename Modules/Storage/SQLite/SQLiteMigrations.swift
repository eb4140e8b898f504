import FoundationEssentials

extension Migration {
    /// SQLite's bookkeeping table; created before anything else so the version can always be read.
    static let sqliteBookkeeping = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY NOT NULL,
            name TEXT NOT NULL,
            applied_at INTEGER NOT NULL
        ) STRICT;
        """

    /// Every SQLite migration this binary knows, in order (PostgreSQL's are
    /// `Migration.postgreSQL`: each engine numbers its own). Times are integer milliseconds since
    /// 1970. Tables are STRICT (SQLite 3.37+) so a type mistake fails loudly instead of being stored.
    static let sqlite: [Migration] = [
        Migration(
            version: 1, name: "users, sessions, audit events, settings",
            sql: """
                CREATE TABLE users (
                    id TEXT PRIMARY KEY NOT NULL,
                    username TEXT UNIQUE,
                    display_name TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    disabled_at INTEGER
                ) STRICT;

                CREATE TABLE sessions (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    token_hash BLOB NOT NULL UNIQUE,
                    client_kind TEXT NOT NULL,
                    auth_method TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    last_seen_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL,
                    revoked_at INTEGER,
                    user_agent TEXT,
                    ip_address TEXT
                ) STRICT;
                -- Listing and revoking a user's sessions, and the cascade on user deletion.
                CREATE INDEX sessions_user_id ON sessions(user_id);

                -- No foreign key on user_id: the audit trail must outlive the users it mentions.
                CREATE TABLE audit_events (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    at INTEGER NOT NULL,
                    action TEXT NOT NULL,
                    actor TEXT NOT NULL,
                    user_id TEXT,
                    request_id TEXT,
                    ip_address TEXT,
                    details TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(details))
                ) STRICT;
                -- The admin API pages one user's trail newest first.
                CREATE INDEX audit_events_user_id ON audit_events(user_id, id);

                CREATE TABLE settings (
                    key TEXT PRIMARY KEY NOT NULL,
                    value BLOB NOT NULL,
                    updated_at INTEGER NOT NULL
                ) STRICT;
                """),
        Migration(
            version: 2, name: "user handles, passkeys, challenges",
            sql: """
                -- Nullable only because ALTER TABLE cannot add a NOT NULL column without a default,
                -- and rebuilding users would cascade through sessions' foreign key. The triggers
                -- below refuse NULL instead, and every existing user gets a handle here.
                ALTER TABLE users ADD COLUMN user_handle BLOB;
                UPDATE users SET user_handle = randomblob(32);
                -- Discoverable login finds the account by the handle the authenticator returns.
                CREATE UNIQUE INDEX users_user_handle ON users(user_handle);
                CREATE TRIGGER users_user_handle_insert BEFORE INSERT ON users
                    WHEN NEW.user_handle IS NULL OR length(NEW.user_handle) NOT BETWEEN 1 AND 64
                BEGIN SELECT RAISE(ABORT, 'users.user_handle must be 1 to 64 bytes'); END;
                CREATE TRIGGER users_user_handle_update BEFORE UPDATE OF user_handle ON users
                    WHEN NEW.user_handle IS NULL OR length(NEW.user_handle) NOT BETWEEN 1 AND 64
                BEGIN SELECT RAISE(ABORT, 'users.user_handle must be 1 to 64 bytes'); END;

                -- A rowid table with the credential id as its (automatically indexed) primary
                -- key: credential ids run to 1023 bytes, too long to be the B-tree key of every row.
                CREATE TABLE passkeys (
                    credential_id BLOB PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    public_key BLOB NOT NULL,
                    algorithm INTEGER NOT NULL,
                    sign_count INTEGER NOT NULL CHECK (sign_count BETWEEN 0 AND 4294967295),
                    aaguid TEXT NOT NULL,
                    provider_name TEXT,
                    transports TEXT NOT NULL DEFAULT '[]'
                        CHECK (json_valid(transports) AND json_type(transports) = 'array'),
                    backup_eligible INTEGER NOT NULL CHECK (backup_eligible IN (0, 1)),
                    backup_state INTEGER NOT NULL CHECK (backup_state IN (0, 1)),
                    attestation_format TEXT NOT NULL,
                    attestation_type TEXT NOT NULL,
                    attestation_trusted INTEGER NOT NULL CHECK (attestation_trusted IN (0, 1)),
                    name TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    last_used_at INTEGER
                ) STRICT;
                -- Listing (oldest first) and counting a user's passkeys, and the cascade.
                CREATE INDEX passkeys_user_id ON passkeys(user_id, created_at);

                -- No foreign key on user_id: a sign-up challenge precedes its user. WITHOUT
                -- ROWID: the rows are small and only ever found by id, so the id is the key.
                CREATE TABLE challenges (
                    id TEXT PRIMARY KEY NOT NULL,
                    challenge BLOB NOT NULL,
                    purpose TEXT NOT NULL CHECK (purpose IN ('registration', 'login')),
                    user_id TEXT,
                    username TEXT,
                    display_name TEXT,
                    user_handle BLOB,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL
                ) STRICT, WITHOUT ROWID;
                -- Purging expired challenges.
                CREATE INDEX challenges_expires_at ON challenges(expires_at);
                """),
        Migration(
            version: 3, name: "bankid orders",
            sql: """
                -- One row per BankID order: what started it, the QR material, where it stands, its
                -- final result (the person only as a keyed digest), and the collect lease that lets
                -- instances sharing the database send one /collect at a time. WITHOUT ROWID: rows
                -- are only ever found by orderRef.
                CREATE TABLE bankid_orders (
                    order_ref TEXT PRIMARY KEY NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('auth', 'sign', 'phoneAuth', 'phoneSign')),
                    intent TEXT NOT NULL
                        CHECK (intent IN ('login', 'signup', 'recovery', 'link', 'sign')),
                    started_at INTEGER NOT NULL,
                    qr_start_token TEXT,
                    qr_start_secret TEXT,
                    auto_start_token TEXT,
                    end_user_ip TEXT,
                    status TEXT NOT NULL CHECK (status IN ('pending', 'complete', 'failed', 'cancelled')),
                    hint_code TEXT,
                    last_collected_at INTEGER,
                    finished_at INTEGER,
                    completion TEXT CHECK (completion IS NULL OR json_valid(completion)),
                    lease_owner TEXT,
                    lease_expires_at INTEGER,
                    CHECK ((status = 'pending') = (finished_at IS NULL)),
                    CHECK ((status = 'complete') = (completion IS NOT NULL))
                ) STRICT, WITHOUT ROWID;
                -- Purging ended orders past their retention, and abandoned pending ones.
                CREATE INDEX bankid_orders_finished_at ON bankid_orders(finished_at);
                CREATE INDEX bankid_orders_started_at ON bankid_orders(started_at);
                """),
        Migration(
            version: 4, name: "admin tokens, enrollment tokens, audit by action, live sessions",
            sql: """
                -- Admin API tokens: only the SHA-256 of each 256-bit secret is kept, found by that
                -- hash (the index) and compared again in constant time. Revoked rows stay, so the
                -- audit trail's "admin:<name>" keeps meaning one token and a name is never reused.
                CREATE TABLE admin_tokens (
                    id TEXT PRIMARY KEY NOT NULL,
                    name TEXT NOT NULL UNIQUE,
                    scope TEXT NOT NULL CHECK (scope IN ('read', 'write')),
                    token_hash BLOB NOT NULL UNIQUE CHECK (length(token_hash) = 32),
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER,
                    revoked_at INTEGER
                ) STRICT;
                -- One-time passkey enrollment tokens (admin enrollment links, later BankID
                -- recovery): only the SHA-256 is kept; used_at is set once, by the registration
                -- that stores the passkey, in the same transaction.
                CREATE TABLE enrollment_tokens (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    token_hash BLOB NOT NULL UNIQUE CHECK (length(token_hash) = 32),
                    purpose TEXT NOT NULL,
                    created_by TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL,
                    used_at INTEGER
                ) STRICT;
                CREATE INDEX enrollment_tokens_user_id ON enrollment_tokens(user_id);
                -- Which registration challenge was issued for which enrollment token, so finalize
                -- knows to redeem the token. Several challenges may name one token (a retried
                -- ceremony); only one redemption can succeed.
                CREATE TABLE enrollment_challenges (
                    challenge_id TEXT PRIMARY KEY NOT NULL,
                    token_id TEXT NOT NULL REFERENCES enrollment_tokens(id) ON DELETE CASCADE
                ) STRICT, WITHOUT ROWID;
                CREATE INDEX enrollment_challenges_token_id ON enrollment_challenges(token_id);
                -- The metrics endpoint counts live sessions on every scrape: only unrevoked rows
                -- are in this index, so the count reads the index, not the table.
                CREATE INDEX sessions_unrevoked_expires_at ON sessions(expires_at) WHERE revoked_at IS NULL;
                -- The admin API filters the audit trail by action, newest first.
                CREATE INDEX audit_events_action ON audit_events(action, id);
                """),
        Migration(
            version: 5, name: "bankid identities, bankid flows, session step-ups",
            sql: """
                -- A user's linked BankID identity: the keyed HMAC of the personal number (with the
                -- id of its key) and the name BankID gave. One per user (the key), and one user per
                -- identity (the UNIQUE), so a person reaches exactly one account.
                CREATE TABLE bankid_identities (
                    user_id TEXT PRIMARY KEY NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    key_id TEXT NOT NULL,
                    digest BLOB NOT NULL,
                    name TEXT NOT NULL,
                    linked_at INTEGER NOT NULL,
                    UNIQUE (key_id, digest)
                ) STRICT;

                -- The client's side of an order: our own orderId (only its SHA-256), the client it
                -- is bound to (SHA-256 of a session or binding cookie), and BankID's orderRef, which
                -- never leaves the server. consumed_at makes the completion usable once.
                CREATE TABLE bankid_flows (
                    id_hash BLOB PRIMARY KEY NOT NULL,
                    order_ref TEXT NOT NULL UNIQUE,
                    intent TEXT NOT NULL
                        CHECK (intent IN ('login', 'signup', 'recovery', 'link', 'sign')),
                    same_device INTEGER NOT NULL CHECK (same_device IN (0, 1)),
                    client_kind TEXT NOT NULL CHECK (client_kind IN ('web', 'native')),
                    binding_hash BLOB NOT NULL,
                    user_id TEXT REFERENCES users(id) ON DELETE CASCADE,
                    session_id TEXT,
                    return_nonce TEXT,
                    user_visible_text TEXT,
                    created_at INTEGER NOT NULL,
                    consumed_at INTEGER,
                    outcome TEXT,
                    CHECK ((consumed_at IS NULL) = (outcome IS NULL))
                ) STRICT, WITHOUT ROWID;
                -- Purging old flows.
                CREATE INDEX bankid_flows_created_at ON bankid_flows(created_at);
                -- The cascade on user deletion.
                CREATE INDEX bankid_flows_user_id ON bankid_flows(user_id);

                -- A completed BankID signature kept with the session it stepped up (the latest one).
                CREATE TABLE session_step_ups (
                    session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                    signed_at INTEGER NOT NULL,
                    valid_until INTEGER NOT NULL,
                    user_visible_text TEXT NOT NULL,
                    signature TEXT,
                    ocsp_response TEXT
                ) STRICT;
                """),
        Migration(
            version: 6, name: "recovery tokens bound to their client, the app-store review account",
            sql: """
                -- A recovery's enrollment token is good only for the client its BankID order was
                -- bound to: the SHA-256 of that binding (NULL for an administrator's link).
                ALTER TABLE enrollment_tokens ADD COLUMN binding_hash BLOB
                    CHECK (binding_hash IS NULL OR length(binding_hash) = 32);

                -- The sandboxed account the app-store reviewer login reaches. Only accounts listed
                -- here can be reached that way, whatever username the configuration names.
                CREATE TABLE review_accounts (
                    user_id TEXT PRIMARY KEY NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    created_at INTEGER NOT NULL
                ) STRICT, WITHOUT ROWID;
                """),
        Migration(
            version: 7, name: "used sealed login challenges",
            sql: """
                -- Login challenges are sealed (MACed) into their own id and not stored when issued;
                -- only their use is, one row per challenge answered or refused, kept until the
                -- challenge would have expired anyway so that it cannot be answered twice. Keyed by
                -- expiry first: challenges are used in roughly the order they were issued, so a
                -- batch of logins appends to the last leaf instead of touching a random page each,
                -- and the purge deletes a range from the front. The MAC fixes each challenge's
                -- expiry, so the pair is as unique as the challenge bytes alone.
                CREATE TABLE used_challenges (
                    expires_at INTEGER NOT NULL,
                    challenge BLOB NOT NULL CHECK (length(challenge) BETWEEN 16 AND 64),
                    PRIMARY KEY (expires_at, challenge)
                ) STRICT, WITHOUT ROWID;
                """),
        Migration(
            version: 8, name: "audit events without AUTOINCREMENT",
            sql: """
                -- AUTOINCREMENT made every audited write also update sqlite_sequence: one more page
                -- in every transaction that audits, every sign-in included. Without it a new row gets
                -- max(id) + 1, so ids still only grow as long as the newest rows are never deleted,
                -- and Portvakt never deletes audit events. The table is rebuilt with every row and
                -- id kept; nothing references it (no foreign keys, triggers or views).
                CREATE TABLE audit_events_rebuilt (
                    id INTEGER PRIMARY KEY,
                    at INTEGER NOT NULL,
                    action TEXT NOT NULL,
                    actor TEXT NOT NULL,
                    user_id TEXT,
                    request_id TEXT,
                    ip_address TEXT,
                    details TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(details))
                ) STRICT;
                INSERT INTO audit_events_rebuilt (id, at, action, actor, user_id, request_id, ip_address, details)
                    SELECT id, at, action, actor, user_id, request_id, ip_address, details
                    FROM audit_events ORDER BY id;
                DROP TABLE audit_events;
                ALTER TABLE audit_events_rebuilt RENAME TO audit_events;
                -- The admin API pages one user's trail, and filters by action, newest first.
                CREATE INDEX audit_events_user_id ON audit_events(user_id, id);
                CREATE INDEX audit_events_action ON audit_events(action, id);
                """),
        Migration(
            version: 9, name: "bankid orders remember a failing collect",
            sql: """
                -- When the last /collect failed (BankID unreachable or erroring), NULL once one is
                -- answered again: pollers on every instance then show that BankID is not answering.
                ALTER TABLE bankid_orders ADD COLUMN collect_failed_at INTEGER;
                """),
        Migration(
            version: 10, name: "bankid signature evidence",
            sql: """
                -- The evidence of each completed BankID signature: what was signed, BankID's OCSP
                -- response and completion facts, and the signature itself only where the deployment
                -- keeps it (it names the signer: personal number and name); otherwise its SHA-256.
                -- The audit event bankid.step_up names the row (details.evidenceId). Kept while the
                -- account exists, past the session it stepped up.
                CREATE TABLE bankid_signatures (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    session_id TEXT NOT NULL,
                    signed_at INTEGER NOT NULL,
                    user_visible_text TEXT NOT NULL,
                    signature_sha256 BLOB NOT NULL CHECK (length(signature_sha256) = 32),
                    signature TEXT,
                    ocsp_response TEXT,
                    bankid_issue_date TEXT,
                    mrtd INTEGER CHECK (mrtd IN (0, 1)),
                    risk TEXT
                ) STRICT, WITHOUT ROWID;
                -- An administrator lists one user's signatures, newest first.
                CREATE INDEX bankid_signatures_user_id ON bankid_signatures(user_id, signed_at);

                -- The step-up keeps only what the session needs; the signature (personal data) no
                -- longer sits beside it.
                ALTER TABLE session_step_ups DROP COLUMN signature;
                ALTER TABLE session_step_ups DROP COLUMN ocsp_response;
                """),
        Migration(
            version: 11, name: "the support desk's bankid phone verifications",
            sql: """
                -- An agent's BankID phone order for one account: the number the caller stated
                -- only as its keyed HMAC, and, once over, how it ended; never who completed it.
                CREATE TABLE bankid_phone_verifications (
                    id TEXT PRIMARY KEY NOT NULL,
                    order_ref TEXT NOT NULL UNIQUE,
                    kind TEXT NOT NULL CHECK (kind IN ('auth', 'sign')),
                    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    call_initiator TEXT NOT NULL CHECK (call_initiator IN ('RP', 'user')),
                    stated_key_id TEXT NOT NULL,
                    stated_digest BLOB NOT NULL CHECK (length(stated_digest) = 32),
                    started_by TEXT NOT NULL,
                    started_by_token_id TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    finished_at INTEGER,
                    outcome TEXT CHECK (outcome IN
                        ('verified', 'not_verified', 'failed', 'cancelled', 'expired')),
                    hint_code TEXT,
                    signature_received INTEGER NOT NULL CHECK (signature_received IN (0, 1)),
                    CHECK ((finished_at IS NULL) = (outcome IS NULL))
                ) STRICT, WITHOUT ROWID;
                -- Purging old verifications, and the cascade on user deletion.
                CREATE INDEX bankid_phone_verifications_created_at ON bankid_phone_verifications(created_at);
                CREATE INDEX bankid_phone_verifications_user_id ON bankid_phone_verifications(user_id);
                """),
        Migration(
            version: 12, name: "admin tokens that may only introspect sessions",
            sql: """
                -- A third scope, for an app's own servers: introspect sessions and nothing else.
                -- A STRICT table's CHECK cannot be altered, so the table is rebuilt with every row
                -- kept; nothing references it (no foreign keys, triggers or views).
                CREATE TABLE admin_tokens_rebuilt (
                    id TEXT PRIMARY KEY NOT NULL,
                    name TEXT NOT NULL UNIQUE,
                    scope TEXT NOT NULL CHECK (scope IN ('read', 'write', 'introspect')),
                    token_hash BLOB NOT NULL UNIQUE CHECK (length(token_hash) = 32),
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER,
                    revoked_at INTEGER
                ) STRICT;
                INSERT INTO admin_tokens_rebuilt (id, name, scope, token_hash, created_at, expires_at, revoked_at)
                    SELECT id, name, scope, token_hash, created_at, expires_at, revoked_at FROM admin_tokens;
                DROP TABLE admin_tokens;
                ALTER TABLE admin_tokens_rebuilt RENAME TO admin_tokens;
                """),
        Migration(
            version: 13, name: "the webhook outbox",
            sql: """
                -- Each change an app's servers hear of, written in the change's own transaction:
                -- the exact JSON body that is signed and sent (ids only, never personal data).
                CREATE TABLE webhook_events (
                    id TEXT PRIMARY KEY NOT NULL,
                    type TEXT NOT NULL,
                    occurred_at INTEGER NOT NULL,
                    payload TEXT NOT NULL,
                    created_at INTEGER NOT NULL
                ) STRICT, WITHOUT ROWID;
                -- Purging delivered and failed events after the retention.
                CREATE INDEX webhook_events_created_at ON webhook_events(created_at);
                -- One row per event and endpoint: its state, its attempts, and the lease of the
                -- one instance that may be sending it right now.
                CREATE TABLE webhook_deliveries (
                    id TEXT PRIMARY KEY NOT NULL,
                    event_id TEXT NOT NULL REFERENCES webhook_events(id) ON DELETE CASCADE,
                    endpoint TEXT NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
                    attempts INTEGER NOT NULL CHECK (attempts >= 0),
                    next_attempt_at INTEGER NOT NULL,
                    give_up_at INTEGER NOT NULL,
                    lease_owner TEXT,
                    lease_until INTEGER,
                    last_attempt_at INTEGER,
                    last_status INTEGER,
                    last_error TEXT,
                    delivered_at INTEGER,
                    created_at INTEGER NOT NULL,
                    UNIQUE (event_id, endpoint),
                    CHECK ((lease_owner IS NULL) = (lease_until IS NULL))
                ) STRICT, WITHOUT ROWID;
                -- The dispatcher's poll: the due pending deliveries of one endpoint.
                CREATE INDEX webhook_deliveries_due ON webhook_deliveries(endpoint, next_attempt_at)
                    WHERE state = 'pending';
                -- The admin list, newest first.
                CREATE INDEX webhook_deliveries_created_at ON webhook_deliveries(created_at, id);
                """),
        Migration(
            version: 14, name: "signing keys for access tokens",
            sql: """
                -- The ES256 keys that sign access tokens, shared by every instance. The private
                -- half is sealed (AES-256-GCM, nonce || ciphertext || tag, the kid as associated
                -- data) under PORTVAKT_ACCESS_TOKEN_KEY, which never reaches the database; kek_id
                -- names that key. A few rows at most, so no index beyond the key.
                CREATE TABLE signing_keys (
                    kid TEXT PRIMARY KEY NOT NULL,
                    algorithm TEXT NOT NULL CHECK (algorithm IN ('ES256')),
                    public_key BLOB NOT NULL,
                    sealed_private_key BLOB NOT NULL,
                    kek_id TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    activates_at INTEGER NOT NULL,
                    retired_at INTEGER,
                    publish_until INTEGER
                ) STRICT, WITHOUT ROWID;
                """),
        Migration(
            version: 15, name: "sessions remember their last proof of presence",
            sql: """
                -- When the session's user last proved presence: the sign-in, then each passkey
                -- re-authentication or BankID signature. Deleting the account and the other acts
                -- that cannot be undone ask for a recent one. A session stored before this knew only
                -- its sign-in; the default (1970) is never kept, and fails closed if ever it were.
                ALTER TABLE sessions ADD COLUMN authenticated_at INTEGER NOT NULL DEFAULT 0;
                UPDATE sessions SET authenticated_at = created_at;
                """),
        Migration(
            version: 16, name: "conditional registration challenges",
            sql: """
                -- A registration started with mediation "conditional" (an automatic passkey
                -- upgrade) may be answered without user presence; every other ceremony needs it.
                ALTER TABLE challenges ADD COLUMN conditional INTEGER NOT NULL DEFAULT 0
                    CHECK (conditional IN (0, 1));
                """),
        Migration(
            version: 17, name: "a user's credential ids from the index alone",
            sql: """
                -- Every passkey sign-in lists its user's credential ids inside its commit (the
                -- Signal API), oldest first, ties by id. With the id in the index that is a range
                -- of one index, with no row read and no sort, on the single writer's time.
                DROP INDEX passkeys_user_id;
                CREATE INDEX passkeys_user_id ON passkeys(user_id, created_at, credential_id);
                """),
    ]
}
