// The writes of one passkey login on SQLite alone: no HTTP, no Swift, no other thread. How cheap
// can SQLite make the login's durable commit on this machine, and how much would a different
// sessions table or larger group commits save? (Docs/performance.md, "What storage costs".)
//
// Usage: login_writes DATABASE VARIANT BATCH LOGINS
//   DATABASE  a fresh file `portvakt migrate` made (the product's own schema); it is changed
//   VARIANT   random-keys the schema as migrated, with random session ids and token hashes (as
//                         before SessionKeys)
//             today       the schema as migrated; ids and stored token forms begin with the time,
//                         as SessionKeys makes them
//             split-token sessions WITHOUT ROWID keyed by a time-ordered id; the token's hash is no
//                         longer a key (a token would carry its session id and a secret checked
//                         against a hash in the row); the user index kept
//             clustered   sessions WITHOUT ROWID keyed by (user_id, id): no user index either
//             journal     the schema as migrated, but the session and the audit event are one row of
//                         an append-only table keyed by the stored token form (time first), moved
//                         into `sessions` and `audit_events` by a fold every 2,048 logins, in a
//                         transaction of its own (here on the same thread, so its CPU is counted;
//                         the measured logins' rows are all folded inside the measurement, and
//                         no warm-up login's)
//             journal-commit-only  the same without the fold: what the login's commit alone costs
//   BATCH     logins per transaction, each in a savepoint as GroupCommit runs them; a divisor of 2,048
//   LOGINS    measured logins, after 6,144 unmeasured ones
// Prints the process's CPU time (user + system) per login. As the server does: WAL, synchronous
// NORMAL, foreign keys on, statements prepared once, and a checkpoint every 4,000 WAL frames (here
// on the same thread; the server has a thread of its own for it). The statements are those of
// SQLStore.commitPasskeyLogin (keep them in step): the used challenge, the passkey's use, the
// session, the audit event and the user's credential ids; 10,000 users with one passkey each.
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>

// The warm-up is a multiple of FOLD (and so of every BATCH): its last login folds the journal.
enum { USERS = 10000, FOLD = 2048, WARMUP = 3 * FOLD };
static sqlite3 *db;
static char users[USERS][33];
static unsigned char credentials[USERS][16];

static void fail(const char *what) {
    fprintf(stderr, "login_writes: %s: %s\n", what, sqlite3_errmsg(db));
    exit(1);
}

static void execute(const char *sql) {
    if (sqlite3_exec(db, sql, 0, 0, 0) != SQLITE_OK) fail(sql);
}

static sqlite3_stmt *prepare(const char *sql) {
    sqlite3_stmt *statement;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &statement, 0) != SQLITE_OK) fail(sql);
    return statement;
}

static void run(sqlite3_stmt *statement) {
    while (sqlite3_step(statement) == SQLITE_ROW) {}
    if (sqlite3_reset(statement) != SQLITE_OK) fail("step");
}

// Moves the journal's rows into `sessions` and `audit_events` in one transaction.
static void foldJournal(sqlite3_stmt *sessions, sqlite3_stmt *events, sqlite3_stmt *empty) {
    execute("BEGIN IMMEDIATE");
    run(sessions);
    run(events);
    run(empty);
    execute("COMMIT");
}

static void randomHex(char *out, int bytes) {
    unsigned char raw[32];
    if (getrandom(raw, bytes, 0) != bytes) exit(1);
    for (int i = 0; i < bytes; i++) sprintf(out + 2 * i, "%02x", raw[i]);
}

static double cpuSeconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

// The sessions table of a variant, replacing the empty one `portvakt migrate` made.
static void reshapeSessions(const char *variant) {
    const char *key = strcmp(variant, "clustered") == 0 ? "PRIMARY KEY (user_id, id)" : "PRIMARY KEY (id)";
    char sql[2048];
    snprintf(sql, sizeof sql,
        "PRAGMA foreign_keys = OFF; DROP TABLE sessions;"
        "CREATE TABLE sessions (id TEXT NOT NULL, user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
        " token_hash BLOB, client_kind TEXT NOT NULL, auth_method TEXT NOT NULL, created_at INTEGER NOT NULL,"
        " last_seen_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, revoked_at INTEGER, user_agent TEXT,"
        " ip_address TEXT, authenticated_at INTEGER NOT NULL DEFAULT 0, %s) STRICT, WITHOUT ROWID;"
        "CREATE UNIQUE INDEX sessions_token_hash ON sessions(token_hash) WHERE token_hash IS NOT NULL;"
        "CREATE INDEX sessions_unrevoked_expires_at ON sessions(expires_at) WHERE revoked_at IS NULL;"
        "%s PRAGMA foreign_keys = ON;",
        key, strcmp(variant, "clustered") == 0 ? "" : "CREATE INDEX sessions_user_id ON sessions(user_id);");
    execute(sql);
}

static void seed(void) {
    sqlite3_stmt *user = prepare(
        "INSERT INTO users (id, username, display_name, created_at, disabled_at, user_handle)"
        " VALUES (?1, ?2, ?2, 1700000000000, NULL, randomblob(32))");
    sqlite3_stmt *passkey = prepare(
        "INSERT INTO passkeys (credential_id, user_id, public_key, algorithm, sign_count, aaguid, provider_name,"
        " transports, backup_eligible, backup_state, attestation_format, attestation_type, attestation_trusted,"
        " name, created_at, last_used_at) VALUES (?1, ?2, randomblob(77), -7, 0,"
        " '00000000-0000-0000-0000-000000000000', NULL, '[\"internal\"]', 1, 1, 'none', 'none', 0, 'Passkey',"
        " 1700000000000, NULL)");
    execute("BEGIN");
    for (int i = 0; i < USERS; i++) {
        char name[32];
        randomHex(users[i], 16);
        if (getrandom(credentials[i], sizeof credentials[i], 0) != sizeof credentials[i]) exit(1);
        snprintf(name, sizeof name, "user%05d", i);
        sqlite3_bind_text(user, 1, users[i], -1, SQLITE_STATIC);
        sqlite3_bind_text(user, 2, name, -1, SQLITE_TRANSIENT);
        run(user);
        sqlite3_bind_blob(passkey, 1, credentials[i], sizeof credentials[i], SQLITE_STATIC);
        sqlite3_bind_text(passkey, 2, users[i], -1, SQLITE_STATIC);
        run(passkey);
    }
    execute("COMMIT; PRAGMA wal_checkpoint(TRUNCATE)");
    sqlite3_finalize(user);
    sqlite3_finalize(passkey);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: login_writes DATABASE random-keys|today|split-token|clustered|journal|"
                        "journal-commit-only BATCH LOGINS\n");
        return 2;
    }
    const char *variant = argv[2];
    int batch = atoi(argv[3]), logins = atoi(argv[4]);
    int randomKeys = strcmp(variant, "random-keys") == 0;
    int reshaped = strcmp(variant, "split-token") == 0 || strcmp(variant, "clustered") == 0;
    int fold = strcmp(variant, "journal") == 0;
    int journal = fold || strcmp(variant, "journal-commit-only") == 0;
    if (!randomKeys && !reshaped && !journal && strcmp(variant, "today") != 0) {
        fprintf(stderr, "login_writes: unknown variant %s\n", variant);
        return 2;
    }
    // A fold runs between transactions, so a batch must end where a fold is due.
    if (batch < 1 || logins < 1 || FOLD % batch != 0) {
        fprintf(stderr, "login_writes: BATCH must divide %d and LOGINS be at least 1\n", FOLD);
        return 2;
    }
    if (sqlite3_open(argv[1], &db) != SQLITE_OK) fail("open");
    execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;"
            "PRAGMA temp_store = MEMORY; PRAGMA wal_autocheckpoint = 4000");
    if (reshaped) reshapeSessions(variant);
    if (journal) {
        execute("CREATE TABLE login_journal (token_form BLOB PRIMARY KEY, id TEXT NOT NULL, user_id TEXT NOT NULL,"
                " created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, user_agent TEXT, ip_address TEXT,"
                " request_id TEXT NOT NULL, details TEXT NOT NULL) STRICT, WITHOUT ROWID");
    }
    seed();

    sqlite3_stmt *challenge = prepare(
        "INSERT INTO used_challenges (expires_at, challenge) VALUES (?1, randomblob(32)) ON CONFLICT DO NOTHING");
    sqlite3_stmt *use = prepare(
        "UPDATE passkeys SET sign_count = CASE WHEN sign_count > ?2 THEN sign_count ELSE ?2 END,"
        " backup_state = ?3, last_used_at = CASE WHEN last_used_at > ?4 THEN last_used_at ELSE ?4 END"
        " WHERE credential_id = ?1");
    // The token's stored form is a key of its own on the migrated schema (random, or the time and
    // then a hash); in the reshaped tables the row keeps no token form at all.
    sqlite3_stmt *session = prepare(
        "INSERT INTO sessions (id, user_id, token_hash, client_kind, auth_method, created_at, last_seen_at,"
        " expires_at, revoked_at, user_agent, ip_address, authenticated_at)"
        " VALUES (?1, ?2, ?5, 'native', 'passkey', ?3, ?3, ?4, NULL, 'bench-login', '127.0.0.1', ?3)");
    sqlite3_stmt *audit = prepare(
        "INSERT INTO audit_events (at, action, actor, user_id, request_id, ip_address, details)"
        " VALUES (?1, 'passkey.login', 'user', ?2, ?3, '127.0.0.1', ?4)");
    sqlite3_stmt *entry = journal ? prepare(
        "INSERT INTO login_journal (token_form, id, user_id, created_at, expires_at, user_agent, ip_address,"
        " request_id, details) VALUES (?5, ?1, ?2, ?3, ?4, 'bench-login', '127.0.0.1', ?6, ?7)") : 0;
    sqlite3_stmt *foldSessions = journal ? prepare(
        "INSERT INTO sessions (id, user_id, token_hash, client_kind, auth_method, created_at, last_seen_at,"
        " expires_at, revoked_at, user_agent, ip_address, authenticated_at) SELECT id, user_id, token_form,"
        " 'native', 'passkey', created_at, created_at, expires_at, NULL, user_agent, ip_address, created_at"
        " FROM login_journal ORDER BY token_form") : 0;
    sqlite3_stmt *foldEvents = journal ? prepare(
        "INSERT INTO audit_events (at, action, actor, user_id, request_id, ip_address, details)"
        " SELECT created_at, 'passkey.login', 'user', user_id, request_id, ip_address, details"
        " FROM login_journal ORDER BY token_form") : 0;
    sqlite3_stmt *emptyJournal = journal ? prepare("DELETE FROM login_journal") : 0;
    sqlite3_stmt *credentialIDs = prepare(
        "SELECT credential_id FROM passkeys WHERE user_id = ?1 ORDER BY created_at, credential_id");

    double started = 0;
    for (int k = 0; k < WARMUP + logins; k++) {
        if (k == WARMUP) started = cpuSeconds();
        long long now = 1800000000000LL + k;
        int u = (int)(random() % USERS);
        char id[40], request[33], details[160];
        // The stored token form: 6 bytes of time (not with random keys), then 32 random ones.
        unsigned char tokenForm[38];
        int timeLength = randomKeys ? 0 : 6;
        for (int b = 0; b < timeLength; b++) tokenForm[b] = (unsigned char)(now >> (8 * (5 - b)));
        if (getrandom(tokenForm + timeLength, 32, 0) != 32) exit(1);
        if (randomKeys) {
            randomHex(id, 11);
        } else {
            // Milliseconds first: the order of creation.
            snprintf(id, sizeof id, "%012llx", now);
            randomHex(id + 12, 5);
        }
        randomHex(request, 8);
        snprintf(details, sizeof details, "{\"credentialId\":\"AAAAAAAAAAAAAAAAAAAAAA\",\"sessionId\":\"%s\"}", id);
        if (k % batch == 0) execute("BEGIN IMMEDIATE");
        if (batch > 1) execute("SAVEPOINT job");
        sqlite3_bind_int64(challenge, 1, now + 300000);
        run(challenge);
        sqlite3_bind_blob(use, 1, credentials[u], sizeof credentials[u], SQLITE_STATIC);
        sqlite3_bind_int64(use, 2, 0);
        sqlite3_bind_int(use, 3, 1);
        sqlite3_bind_int64(use, 4, now);
        run(use);
        if (journal) {
            sqlite3_bind_text(entry, 1, id, -1, SQLITE_STATIC);
            sqlite3_bind_text(entry, 2, users[u], -1, SQLITE_STATIC);
            sqlite3_bind_int64(entry, 3, now);
            sqlite3_bind_int64(entry, 4, now + 30LL * 86400000);
            sqlite3_bind_blob(entry, 5, tokenForm, timeLength + 32, SQLITE_STATIC);
            sqlite3_bind_text(entry, 6, request, -1, SQLITE_STATIC);
            sqlite3_bind_text(entry, 7, details, -1, SQLITE_STATIC);
            run(entry);
        } else {
            sqlite3_bind_text(session, 1, id, -1, SQLITE_STATIC);
            sqlite3_bind_text(session, 2, users[u], -1, SQLITE_STATIC);
            sqlite3_bind_int64(session, 3, now);
            sqlite3_bind_int64(session, 4, now + 30LL * 86400000);
            if (reshaped) {
                sqlite3_bind_null(session, 5);
            } else {
                sqlite3_bind_blob(session, 5, tokenForm, timeLength + 32, SQLITE_STATIC);
            }
            run(session);
            sqlite3_bind_int64(audit, 1, now);
            sqlite3_bind_text(audit, 2, users[u], -1, SQLITE_STATIC);
            sqlite3_bind_text(audit, 3, request, -1, SQLITE_STATIC);
            sqlite3_bind_text(audit, 4, details, -1, SQLITE_STATIC);
            run(audit);
        }
        sqlite3_bind_text(credentialIDs, 1, users[u], -1, SQLITE_STATIC);
        run(credentialIDs);
        if (batch > 1) execute("RELEASE job");
        if (k % batch == batch - 1) execute("COMMIT");
        // After the commit above: FOLD is a multiple of BATCH.
        if (fold && k % FOLD == FOLD - 1) foldJournal(foldSessions, foldEvents, emptyJournal);
    }
    if ((WARMUP + logins) % batch != 0) execute("COMMIT");
    if (fold) foldJournal(foldSessions, foldEvents, emptyJournal);
    printf("%.1f\n", (cpuSeconds() - started) / logins * 1e6);
    sqlite3_close(db);
    return 0;
}
