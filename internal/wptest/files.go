package wptest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// FilesHolding lists the files of dir whose bytes hold one of needles,
// letters in any case, each with the needle found. Removed text must leave
// the state dir's files, not only the rows that held it; the store's and
// the daemon's tests both scan for it.
func FilesHolding(t testing.TB, dir string, needles ...string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		lb := bytes.ToLower(b)
		for _, n := range needles {
			if bytes.Contains(lb, bytes.ToLower([]byte(n))) {
				found = append(found, fmt.Sprintf("%s (%d bytes) holds %.24q", e.Name(), len(b), n))
			}
		}
	}
	return found
}
