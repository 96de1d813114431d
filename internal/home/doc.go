// Package home locates and manages stepwise's home directory, which holds
// the embedded database, the workflow library and the server key:
//
//	<home>/stepwise.db    the SQLite store
//	<home>/workflows/     saved workflows, <name>.yaml|.yml|.json
//	<home>/key            32 random bytes, mode 0600, created on first use
//
// The home is the --home flag, else $STEPWISE_HOME, else ~/.stepwise.
// The server key can instead come from $STEPWISE_SECRET_KEY, which lets a
// deployment keep it out of the file system; it signs continuation tokens
// and seals secrets, so losing it invalidates both.
package home
