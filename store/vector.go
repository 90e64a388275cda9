package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"

	_ "modernc.org/sqlite/vec" // sqlite-vec: vec_distance_cosine() for hybrid search
)

// metaVectorModel names the model the stored vectors came from.
const metaVectorModel = "embedding_model"

// ErrVectorModel is returned by PutVectors when the vectors were computed
// with another model than the store's: a re-embed began meanwhile.
var ErrVectorModel = errors.New("store: the embedding model changed")

// VectorInput is a chunk still waiting for its embedding.
type VectorInput struct {
	ChunkID int64
	// Input is what is embedded: EmbeddingInput's header and raw text.
	Input string
	// Hash is InputHash(Input), handed back in ChunkVector.
	Hash string
}

// ChunkVector is a chunk's embedding.
type ChunkVector struct {
	ChunkID   int64
	InputHash string
	Vector    []float32
}

// VectorStats counts the stored vectors.
type VectorStats struct {
	Model   string
	Vectors int
	Chunks  int
	Dims    int
}

// EmbeddingInput is the text embedded for a chunk: a contextual header
// naming the page, the section and the kind of content, then the raw
// chunk. A chunk that says "Click Save" is then near a question about
// the page it belongs to, not about every page with a Save button. Only
// the raw chunk is ever displayed.
func EmbeddingInput(title, url string, headingPath []string, postType, chunkType, codeLang, text string) string {
	typ := postType
	if chunkType != "" {
		typ = strings.TrimSpace(typ + " " + chunkType)
	}
	if codeLang != "" {
		typ += " (" + codeLang + ")"
	}
	var b strings.Builder
	b.Grow(len(text) + len(title) + len(url) + 64)
	b.WriteString("Title: " + title + "\n")
	b.WriteString("URL: " + url + "\n")
	b.WriteString("Path: " + strings.Join(headingPath, " > ") + "\n")
	b.WriteString("Type: " + typ + "\n")
	b.WriteString("---\n")
	b.WriteString(text)
	return b.String()
}

// InputHash is the hex sha256 of an embedding input.
func InputHash(input string) string {
	sum := sha256.Sum256([]byte(input))
	return hex.EncodeToString(sum[:])
}

// VectorModel returns the model the stored vectors came from, "" when
// none was ever set.
func (db *DB) VectorModel(ctx context.Context) (string, error) {
	return db.GetMeta(ctx, metaVectorModel)
}

// ResetVectors drops every vector and records model as the one new
// vectors come from. It returns how many vectors were dropped.
func (db *DB) ResetVectors(ctx context.Context, model string) (int64, error) {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store: reset vectors: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `DELETE FROM chunk_vectors`)
	if err != nil {
		return 0, fmt.Errorf("store: reset vectors: %w", err)
	}
	n, _ := res.RowsAffected()
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
		metaVectorModel, model); err != nil {
		return 0, fmt.Errorf("store: reset vectors: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: reset vectors: %w", err)
	}
	return n, nil
}

const vectorInputCols = `c.id, c.text, c.heading_path, c.type, c.code_lang, d.title, d.url, d.post_type`

func scanVectorInput(sc interface{ Scan(...any) error }) (VectorInput, error) {
	var (
		v                                      VectorInput
		text, hp, typ, lang, title, url, ptype string
	)
	if err := sc.Scan(&v.ChunkID, &text, &hp, &typ, &lang, &title, &url, &ptype); err != nil {
		return v, err
	}
	v.Input = EmbeddingInput(title, url, parseList(hp), ptype, typ, lang, text)
	v.Hash = InputHash(v.Input)
	return v, nil
}

// PendingVectors returns up to limit chunks without a vector whose id is
// above afterID, in id order, so a caller can step past a batch the
// endpoint refuses and come back to it on its next sweep.
func (db *DB) PendingVectors(ctx context.Context, afterID int64, limit int) ([]VectorInput, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT `+vectorInputCols+`
		FROM chunks c JOIN documents d ON d.id = c.doc_id
		WHERE c.id > ? AND NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk_id = c.id)
		ORDER BY c.id LIMIT ?`, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("store: pending vectors: %w", err)
	}
	defer rows.Close()
	var out []VectorInput
	for rows.Next() {
		v, err := scanVectorInput(rows)
		if err != nil {
			return nil, fmt.Errorf("store: pending vectors: %w", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: pending vectors: %w", err)
	}
	return out, nil
}

// PutVectors stores vectors computed with model. A vector whose chunk is
// gone, or now produces another input than the one embedded, is skipped;
// it returns how many were stored. All vectors of a store have one
// dimension: a vector of another is an error.
func (db *DB) PutVectors(ctx context.Context, model string, vs []ChunkVector) (int, error) {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store: put vectors: %w", err)
	}
	defer tx.Rollback()
	var have string
	if err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, metaVectorModel).Scan(&have); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("store: put vectors: %w", err)
	}
	if have != model {
		return 0, fmt.Errorf("%w: vectors of %q, store holds %q", ErrVectorModel, model, have)
	}
	var dimBytes int
	if err := tx.QueryRowContext(ctx, `SELECT length(embedding) FROM chunk_vectors LIMIT 1`).Scan(&dimBytes); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("store: put vectors: %w", err)
	}
	cur, err := tx.PrepareContext(ctx, `SELECT `+vectorInputCols+`
		FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.id = ?`)
	if err != nil {
		return 0, fmt.Errorf("store: put vectors: %w", err)
	}
	defer cur.Close()
	ins, err := tx.PrepareContext(ctx, `INSERT INTO chunk_vectors(chunk_id, input_hash, embedding) VALUES(?, ?, ?)
		ON CONFLICT(chunk_id) DO UPDATE SET input_hash = excluded.input_hash, embedding = excluded.embedding`)
	if err != nil {
		return 0, fmt.Errorf("store: put vectors: %w", err)
	}
	defer ins.Close()
	n := 0
	for _, v := range vs {
		if len(v.Vector) == 0 {
			return n, fmt.Errorf("store: put vectors: chunk %d: empty vector", v.ChunkID)
		}
		blob := vectorBlob(v.Vector)
		if dimBytes == 0 {
			dimBytes = len(blob)
		} else if len(blob) != dimBytes {
			return n, fmt.Errorf("store: put vectors: chunk %d: %d dimensions, the store holds %d", v.ChunkID, len(v.Vector), dimBytes/4)
		}
		now, err := scanVectorInput(cur.QueryRowContext(ctx, v.ChunkID))
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("store: put vectors: %w", err)
		}
		if now.Hash != v.InputHash {
			continue
		}
		if _, err := ins.ExecContext(ctx, v.ChunkID, v.InputHash, blob); err != nil {
			return n, fmt.Errorf("store: put vectors: chunk %d: %w", v.ChunkID, err)
		}
		n++
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: put vectors: %w", err)
	}
	return n, nil
}

// VectorStats reports the model, the vector and chunk counts and the
// dimension.
func (db *DB) VectorStats(ctx context.Context) (VectorStats, error) {
	var s VectorStats
	var err error
	if s.Model, err = db.VectorModel(ctx); err != nil {
		return s, err
	}
	var dimBytes sql.NullInt64
	if err := db.read.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM chunk_vectors), (SELECT count(*) FROM chunks),
		(SELECT length(embedding) FROM chunk_vectors LIMIT 1)`).Scan(&s.Vectors, &s.Chunks, &dimBytes); err != nil {
		return s, fmt.Errorf("store: vector stats: %w", err)
	}
	s.Dims = int(dimBytes.Int64 / 4)
	return s, nil
}

// vectorBlob is sqlite-vec's float32 format: little-endian, packed.
func vectorBlob(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// ChunkSimilarity is a chunk's cosine similarity to a query vector.
type ChunkSimilarity struct {
	ChunkID    int64
	Similarity float64
}

// NearestChunks returns the k chunks nearest to vec that keep accepts,
// nearest first. keep (nil keeps all) is how a caller applies its filters,
// which it holds in memory. Vectors of another dimension (left by an
// interrupted re-embed) are skipped, since sqlite-vec refuses to compare
// them; a zero vector is near nothing.
func (db *DB) NearestChunks(ctx context.Context, vec []float32, k int, keep func(chunkID int64) bool) ([]ChunkSimilarity, error) {
	norm := 0.0
	for _, x := range vec {
		norm += float64(x) * float64(x)
	}
	if norm == 0 || math.IsNaN(norm) || math.IsInf(norm, 0) || k <= 0 {
		return nil, nil
	}
	blob := vectorBlob(vec)
	query := `SELECT chunk_id, vec_distance_cosine(embedding, ?) AS dist FROM chunk_vectors
		WHERE length(embedding) = ? ORDER BY dist LIMIT ?`
	args := []any{blob, len(blob), k}
	if keep != nil {
		// Filtered: walk the whole ranking until k pass. Every distance is
		// computed either way; only the rows read grow.
		query = `SELECT chunk_id, vec_distance_cosine(embedding, ?) AS dist FROM chunk_vectors
			WHERE length(embedding) = ? ORDER BY dist`
		args = args[:2]
	}
	rows, err := db.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: nearest chunks: %w", err)
	}
	defer rows.Close()
	var out []ChunkSimilarity
	for rows.Next() && len(out) < k {
		var id int64
		var dist *float64
		if err := rows.Scan(&id, &dist); err != nil {
			return nil, fmt.Errorf("store: nearest chunks: %w", err)
		}
		if dist == nil || (keep != nil && !keep(id)) {
			continue
		}
		out = append(out, ChunkSimilarity{ChunkID: id, Similarity: 1 - *dist})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: nearest chunks: %w", err)
	}
	return out, nil
}
