package cluster

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/askwp/askwpd/store"
)

// Encode turns a stored document into a changelog row's doc and version.
// What is local to one store (row ids, when it was fetched and indexed)
// is left out, so the same page extracted twice has the same version and
// every node stores the same thing.
func Encode(d *store.Document) (doc []byte, version [32]byte, err error) {
	c := *d
	c.ID, c.FetchedAt, c.IndexedAt = 0, time.Time{}, time.Time{}
	c.Chunks = make([]store.Chunk, len(d.Chunks))
	for i, ch := range d.Chunks {
		ch.ID, ch.DocID = 0, 0
		c.Chunks[i] = ch
	}
	raw, err := json.Marshal(&c)
	if err != nil {
		return nil, version, fmt.Errorf("cluster: encode %s: %w", d.URL, err)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if _, err := zw.Write(raw); err != nil {
		return nil, version, fmt.Errorf("cluster: encode %s: %w", d.URL, err)
	}
	if err := zw.Close(); err != nil {
		return nil, version, fmt.Errorf("cluster: encode %s: %w", d.URL, err)
	}
	return buf.Bytes(), sha256.Sum256(raw), nil
}

// Decode reads a changelog row's doc.
func Decode(doc []byte) (*store.Document, error) {
	zr, err := gzip.NewReader(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("cluster: decode: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("cluster: decode: %w", err)
	}
	var d store.Document
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("cluster: decode: %w", err)
	}
	return &d, nil
}
