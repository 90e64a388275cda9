package extract

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// evalPages loads the pages of the named evaluation sets from
// ../../shared/evaldata (override with ASKWP_EVALDATA), skipping when they are
// absent. The pages are third-party and never copied here.
func evalPages(b testing.TB, sets ...string) [][]byte {
	dir := os.Getenv("ASKWP_EVALDATA")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "evaldata")
	}
	var files []string
	for _, set := range sets {
		fs, _ := filepath.Glob(filepath.Join(dir, set, "html", "*.html.gz"))
		files = append(files, fs...)
	}
	if len(files) == 0 {
		b.Skip("evaluation pages not found; set ASKWP_EVALDATA")
	}
	var pages [][]byte
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			b.Fatal(err)
		}
		zr, err := gzip.NewReader(fh)
		if err != nil {
			b.Fatal(err)
		}
		data, err := io.ReadAll(zr)
		fh.Close()
		if err != nil {
			b.Fatal(err)
		}
		pages = append(pages, data)
	}
	return pages
}

// BenchmarkExtractPages runs extract + chunk over every dev page and reports the
// median and p95 per page (the target is a median of at most 3 ms).
func BenchmarkExtractPages(b *testing.B) {
	pages := evalPages(b, "article-extraction-benchmark")
	ctx := context.Background()
	var per []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range pages {
			t0 := time.Now()
			if _, err := Extract(ctx, bytes.NewReader(p), Options{URL: "https://example.org/a/"}); err != nil {
				b.Fatal(err)
			}
			per = append(per, time.Since(t0))
		}
	}
	b.StopTimer()
	sort.Slice(per, func(i, j int) bool { return per[i] < per[j] })
	b.ReportMetric(float64(per[len(per)/2].Microseconds())/1000, "ms/page-p50")
	b.ReportMetric(float64(per[len(per)*95/100].Microseconds())/1000, "ms/page-p95")
}

func BenchmarkChunkMarkdown(b *testing.B) {
	data, err := os.ReadFile("testdata/tt3-php-fpm-per-site-pool-users.md")
	if err != nil {
		b.Fatal(err)
	}
	md := string(data)
	b.SetBytes(int64(len(md)))
	for i := 0; i < b.N; i++ {
		ChunkMarkdown(md, ChunkOptions{})
	}
}
