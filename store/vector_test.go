package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/internal/fakeembed"
)

func garageDocs() []*Document {
	doc := func(path, typ, title, body string, cats ...string) *Document {
		return &Document{
			URL: "http://x.test" + path, Title: title, PostType: typ, Body: body, Text: body, Lang: "en",
			Published: time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC), ContentHash: "h-" + path, Categories: cats,
			Chunks: []Chunk{{Ord: 0, Start: 0, End: len([]rune(body)), Text: body, Type: "prose", HeadingPath: []string{title}, ContentHash: "c-" + path}},
		}
	}
	return []*Document{
		doc("/engine-care/", "post", "Looking after your automobile",
			"Regular maintenance keeps an automobile running: change the lubricant every spring and check the tyres.", "Garage"),
		doc("/checklist/", "page", "Automobile checklist", "Yearly upkeep for the automobile: lubricant, brakes and lights."),
		doc("/parking/", "page", "Parking at the office", "Park your car in bay three. Visitors leave the car at the gate."),
		doc("/bicycles/", "post", "Bicycle repair", "Fix a flat tyre on your bicycle with a patch kit."),
		doc("/hours/", "page", "Opening hours", "We are open from nine to five, Monday to Friday."),
	}
}

func embedAll(t *testing.T, db *DB, model string) int {
	t.Helper()
	ctx := context.Background()
	pend, err := db.PendingVectors(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var vs []ChunkVector
	for _, p := range pend {
		vs = append(vs, ChunkVector{ChunkID: p.ChunkID, InputHash: p.Hash, Vector: fakeembed.Vector(p.Input)})
	}
	n, err := db.PutVectors(ctx, model, vs)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestVectors_StoreLifecycle(t *testing.T) {
	ctx := context.Background()
	db := openTB(t)
	docs := garageDocs()
	for _, d := range docs {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ResetVectors(ctx, "m1"); err != nil {
		t.Fatal(err)
	}
	pend, err := db.PendingVectors(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(pend) != len(docs) {
		t.Fatalf("pending %d chunks, want %d", len(pend), len(docs))
	}
	// The input carries the page's context; the chunk's own text ends it.
	want := "Title: Looking after your automobile\nURL: http://x.test/engine-care/\nPath: Looking after your automobile\nType: post prose\n---\n" + docs[0].Chunks[0].Text
	if pend[0].Input != want || pend[0].Hash != InputHash(want) {
		t.Fatalf("input:\n%q\nwant:\n%q", pend[0].Input, want)
	}
	if n := embedAll(t, db, "m1"); n != len(docs) {
		t.Fatalf("stored %d vectors, want %d", n, len(docs))
	}
	st, err := db.VectorStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Model != "m1" || st.Vectors != len(docs) || st.Chunks != len(docs) || st.Dims != 64 {
		t.Fatalf("stats %+v", st)
	}

	// Vectors of another model are refused: a re-embed started meanwhile.
	if _, err := db.PutVectors(ctx, "m0", []ChunkVector{{ChunkID: pend[0].ChunkID, InputHash: pend[0].Hash, Vector: []float32{1}}}); !errors.Is(err, ErrVectorModel) {
		t.Fatalf("PutVectors with another model: %v, want ErrVectorModel", err)
	}
	// Vectors of another dimension are refused.
	if _, err := db.PutVectors(ctx, "m1", []ChunkVector{{ChunkID: pend[0].ChunkID, InputHash: pend[0].Hash, Vector: []float32{1, 2}}}); err == nil {
		t.Fatal("PutVectors accepted a 2-dimension vector into a 64-dimension store")
	}

	// A changed page gets new chunks: their vectors go, they are pending.
	changed := garageDocs()[0]
	changed.Body = "Maintenance of the automobile, rewritten."
	changed.Text, changed.ContentHash = changed.Body, "h-new"
	changed.Chunks[0].Text, changed.Chunks[0].End = changed.Body, len([]rune(changed.Body))
	if _, err := db.PutDocument(ctx, changed); err != nil {
		t.Fatal(err)
	}
	pend2, err := db.PendingVectors(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(pend2) != 1 || !strings.HasSuffix(pend2[0].Input, "rewritten.") {
		t.Fatalf("after an edit, pending %+v, want the one new chunk", pend2)
	}
	// A vector computed from the old input is not stored for the new
	// chunk, even if it got the old chunk's id.
	if n, err := db.PutVectors(ctx, "m1", []ChunkVector{{ChunkID: pend2[0].ChunkID, InputHash: pend[0].Hash, Vector: fakeembed.Vector(pend[0].Input)}}); err != nil || n != 0 {
		t.Fatalf("stale vector: stored %d, err %v; want 0, nil", n, err)
	}
	embedAll(t, db, "m1")

	// Deleting a page deletes its vectors.
	if ok, err := db.DeleteDocument(ctx, "http://x.test/parking/"); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if st, _ = db.VectorStats(ctx); st.Vectors != len(docs)-1 || st.Chunks != len(docs)-1 {
		t.Fatalf("after delete: %+v", st)
	}
	var orphans int
	if err := db.read.QueryRowContext(ctx, `SELECT count(*) FROM chunk_vectors WHERE chunk_id NOT IN (SELECT id FROM chunks)`).Scan(&orphans); err != nil || orphans != 0 {
		t.Fatalf("orphan vectors: %d, %v", orphans, err)
	}

	// A new model drops them all.
	n, err := db.ResetVectors(ctx, "m2")
	if err != nil || n != int64(len(docs)-1) {
		t.Fatalf("reset: dropped %d, %v", n, err)
	}
	if st, _ = db.VectorStats(ctx); st.Vectors != 0 || st.Model != "m2" {
		t.Fatalf("after reset: %+v", st)
	}
}

// BenchmarkNearestChunks times the vector half of a hybrid search: the
// k = 100 nearest of n chunks, unfiltered and filtered to a third of them,
// at real-model dimensions.
//
//	go test -run '^$' -bench NearestChunks -benchtime 20x ./store/
func BenchmarkNearestChunks(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{5000} {
		for _, dims := range []int{64, 768, 1536} {
			db := openTB(b)
			var docs []*Document
			for i := range n {
				body := "chunk " + strings.Repeat("word ", 50)
				docs = append(docs, &Document{URL: "http://x.test/" + strconv.Itoa(i) + "/", Title: "Doc", PostType: "post", Body: body, Text: body,
					Chunks: []Chunk{{Text: body, End: len(body)}}})
			}
			if err := db.PutDocuments(ctx, docs); err != nil {
				b.Fatal(err)
			}
			if _, err := db.ResetVectors(ctx, "rand"); err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, uint64(dims)))
			randVec := func() []float32 {
				v := make([]float32, dims)
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
				return v
			}
			pend, err := db.PendingVectors(ctx, 0, n)
			if err != nil {
				b.Fatal(err)
			}
			var vs []ChunkVector
			for _, p := range pend {
				vs = append(vs, ChunkVector{ChunkID: p.ChunkID, InputHash: p.Hash, Vector: randVec()})
			}
			if _, err := db.PutVectors(ctx, "rand", vs); err != nil {
				b.Fatal(err)
			}
			q := randVec()
			for _, f := range []struct {
				name string
				keep func(int64) bool
			}{{"all", nil}, {"third", func(id int64) bool { return id%3 == 0 }}} {
				b.Run(fmt.Sprintf("n=%d/dims=%d/%s", n, dims, f.name), func(b *testing.B) {
					for b.Loop() {
						cs, err := db.NearestChunks(ctx, q, 100, f.keep)
						if err != nil || len(cs) != 100 {
							b.Fatalf("%d candidates, %v", len(cs), err)
						}
					}
				})
			}
		}
	}
}

func TestNearestChunks(t *testing.T) {
	ctx := context.Background()
	db := openTB(t)
	for _, d := range garageDocs() {
		if _, err := db.PutDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ResetVectors(ctx, "concepts-64"); err != nil {
		t.Fatal(err)
	}
	embedAll(t, db, "concepts-64")
	q := fakeembed.Vector("car upkeep")
	all, err := db.NearestChunks(ctx, q, 3, nil)
	if err != nil || len(all) != 3 {
		t.Fatalf("NearestChunks = %+v, %v", all, err)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Similarity > all[i-1].Similarity {
			t.Fatalf("not nearest first: %+v", all)
		}
	}
	// A filter that refuses the nearest still yields k, the next ones.
	refused := all[0].ChunkID
	kept, err := db.NearestChunks(ctx, q, 3, func(id int64) bool { return id != refused })
	if err != nil || len(kept) != 3 || kept[0].ChunkID != all[1].ChunkID {
		t.Fatalf("filtered = %+v, %v; want 3 starting at %d", kept, err, all[1].ChunkID)
	}
	if none, err := db.NearestChunks(ctx, make([]float32, 64), 3, nil); err != nil || len(none) != 0 {
		t.Fatalf("zero vector: %+v, %v", none, err)
	}
}
