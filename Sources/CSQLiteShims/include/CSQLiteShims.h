#ifndef CSQLITESHIMS_H
#define CSQLITESHIMS_H
#include <sqlite3.h>

/// sqlite3_db_config() is variadic, so Swift cannot call it. These wrappers set the
/// options Faultline needs for files it did not make (see README, "What Faultline promises").
/// Each returns the SQLite result code.
int bs_enable_defensive(sqlite3 *db);
int bs_disable_trusted_schema(sqlite3 *db);
int bs_disable_load_extension(sqlite3 *db);
/// sqlite3_config(SQLITE_CONFIG_MULTITHREAD), before SQLite initialises.
int bs_configure_multithread(void);

#endif
