package store

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// stmtCache keeps a pool's statements by their text, each prepared on a
// connection the first time it runs there. Otherwise modernc's SQLite
// compiles a statement at every call: re-rendering a batch of 35 changed
// pages, compiling the store's statements was a tenth of the daemon's CPU.
// Only statements of fixed text go through it (not those with as many
// placeholders as they have arguments), so it stays as small as the code.
type stmtCache struct {
	pool *sql.DB
	mu   sync.Mutex
	m    map[string]*sql.Stmt
}

// get returns query's statement, preparing it the first time. The lock is
// not held while preparing: a prepare on the writing pool waits for its one
// connection, which a caller inside a transaction holds.
func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	s := c.m[query]
	c.mu.Unlock()
	if s != nil {
		return s, nil
	}
	s, err := c.pool.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept := c.m[query]; kept != nil {
		s.Close()
		return kept, nil
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = s
	return s, nil
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for q, s := range c.m {
		errs = append(errs, s.Close())
		delete(c.m, q)
	}
	return errors.Join(errs...)
}

// readRow is db.read.QueryRowContext through the statement cache. A
// statement that does not prepare runs unprepared, so that its error comes
// back where the caller looks for it.
func (db *DB) readRow(ctx context.Context, query string, args ...any) *sql.Row {
	s, err := db.readStmts.get(ctx, query)
	if err != nil {
		return db.read.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, args...)
}

// readRows is db.read.QueryContext through the statement cache.
func (db *DB) readRows(ctx context.Context, query string, args ...any) (rows *sql.Rows, err error) {
	defer func() { db.noteErr(err) }()
	s, err := db.readStmts.get(ctx, query)
	if err != nil {
		return db.read.QueryContext(ctx, query, args...)
	}
	return s.QueryContext(ctx, args...)
}

// writeExec is db.write.ExecContext through the statement cache; not for
// a caller inside a transaction.
func (db *DB) writeExec(ctx context.Context, query string, args ...any) (res sql.Result, err error) {
	defer func() { db.noteErr(err) }()
	s, err := db.writeStmts.get(ctx, query)
	if err != nil {
		return db.write.ExecContext(ctx, query, args...)
	}
	return s.ExecContext(ctx, args...)
}
