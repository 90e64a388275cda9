package index

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/askwp/askwpd/analysis"
	"github.com/askwp/askwpd/store"
)

func openTB(tb testing.TB) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "askwpd.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// openIndex is New(db), closed at the end of the test.
func openIndex(tb testing.TB, db *store.DB) *Index {
	ix := New(db, analysis.NewAnalyzer())
	tb.Cleanup(ix.Close)
	return ix
}

// oracle lists the store's chunks, as a fresh load reads them.
type oracle struct{ chunks []oracleChunk }

type oracleChunk struct{ c *store.IndexChunk }

func newOracle(tb testing.TB, db *store.DB) *oracle {
	o := &oracle{}
	if _, err := db.ReadIndex(context.Background(), func(c *store.IndexChunk) error {
		o.chunks = append(o.chunks, oracleChunk{c})
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return o
}

// loadSnapshotted loads a new index of db with its snapshot at path, as
// build "build-1".
func loadSnapshotted(t *testing.T, db *store.DB, path string) *Index {
	t.Helper()
	ix := openIndex(t, db)
	ix.SetSnapshot(path, "build-1")
	if err := ix.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ix
}
