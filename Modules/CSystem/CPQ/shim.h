#ifndef CPQ_SHIM_H
#define CPQ_SHIM_H

#include <libpq-fe.h>

// The PG_DIAG_* field codes are character-literal macros ('C', 'M', …), which Swift cannot import;
// each shim hands one to Swift as the int PQresultErrorField takes.

/// PG_DIAG_SQLSTATE: the five-character SQLSTATE, which the wrapper maps to StorageError codes.
static inline int cpq_diag_sqlstate(void) { return PG_DIAG_SQLSTATE; }

/// PG_DIAG_MESSAGE_PRIMARY: the server's one-line message, without DETAIL (which quotes values).
static inline int cpq_diag_message_primary(void) { return PG_DIAG_MESSAGE_PRIMARY; }

/// PG_DIAG_CONSTRAINT_NAME: the constraint a failed statement violated.
static inline int cpq_diag_constraint_name(void) { return PG_DIAG_CONSTRAINT_NAME; }

/// PG_DIAG_TABLE_NAME: the table a failed statement concerned.
static inline int cpq_diag_table_name(void) { return PG_DIAG_TABLE_NAME; }

/// PG_DIAG_COLUMN_NAME: the column a failed statement concerned.
static inline int cpq_diag_column_name(void) { return PG_DIAG_COLUMN_NAME; }

#endif
