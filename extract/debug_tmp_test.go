package extract

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"testing"

	"golang.org/x/net/html"
)

func TestDebugTmp(t *testing.T) {
	f, _ := os.Open(os.Getenv("DBG_FILE"))
	zr, _ := gzip.NewReader(f)
	data, _ := io.ReadAll(zr)
	doc, _ := html.Parse(bytes.NewReader(toUTF8(data)))
	preclean(doc)
	walk(doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && isNoise(n) {
			s := measure(n)
			if s.text > 200 {
				t.Logf("noise %s class=%q id=%q text=%d", n.Data, attr(n, "class"), attr(n, "id"), s.text)
			}
			return true
		}
		return true
	})
}
