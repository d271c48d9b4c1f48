#include "CSQLiteShims.h"

int bs_enable_defensive(sqlite3 *db) {
#ifdef SQLITE_DBCONFIG_DEFENSIVE
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)0);
#else
    return SQLITE_OK;
#endif
}

int bs_disable_trusted_schema(sqlite3 *db) {
#ifdef SQLITE_DBCONFIG_TRUSTED_SCHEMA
    return sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)0);
#else
    return SQLITE_OK;
#endif
}

int bs_disable_load_extension(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, (int *)0);
}

int bs_configure_multithread(void) {
    /* Connections are each used by one thread at a time (GRDB serialises them), so SQLite's
       per-call connection mutex is pure cost. Must run before SQLite initialises; later it
       returns SQLITE_MISUSE and changes nothing. */
    return sqlite3_config(SQLITE_CONFIG_MULTITHREAD);
}
