package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkWrite measures what secure_delete costs the write path:
// storing a page of about 6 KB in five chunks, replacing it with new
// content, and deleting it.
//
//	go test -run '^$' -bench BenchmarkWrite -benchtime 2000x ./store/
func BenchmarkWrite(b *testing.B) {
	page := func(i int, gen string) *Document {
		body := strings.Repeat(fmt.Sprintf("Paragraph %s of page %d about sheds, fences and garden paths. ", gen, i), 100)
		d := testDoc(fmt.Sprintf("http://x.test/p%d/", i), fmt.Sprintf("Page %d", i), body)
		d.ContentHash = gen
		d.Chunks = nil
		n := len([]rune(body)) / 5
		for c := range 5 {
			d.Chunks = append(d.Chunks, Chunk{Ord: c, Start: c * n, End: (c + 1) * n, Text: string([]rune(body)[c*n : (c+1)*n]), Type: "prose"})
		}
		return d
	}
	for _, secure := range []bool{false, true} {
		open := func(b *testing.B) *DB {
			db := openTB(b)
			if !secure {
				// The writer pool has one connection, kept for good.
				if _, err := db.write.Exec(`PRAGMA secure_delete = 0`); err != nil {
					b.Fatal(err)
				}
			}
			return db
		}
		name := fmt.Sprintf("secure_delete=%v", secure)
		ctx := context.Background()
		b.Run(name+"/put", func(b *testing.B) {
			db := open(b)
			for i := 0; b.Loop(); i++ {
				if _, err := db.PutDocument(ctx, page(i, "a")); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/replace", func(b *testing.B) {
			db := open(b)
			for i := range b.N {
				if _, err := db.PutDocument(ctx, page(i, "a")); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := db.PutDocument(ctx, page(i, "b")); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/delete", func(b *testing.B) {
			db := open(b)
			for i := range b.N {
				if _, err := db.PutDocument(ctx, page(i, "a")); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				if ok, err := db.DeleteDocument(ctx, page(i, "a").URL); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}
