// Package fakeembed is a deterministic stand-in for an embedding model,
// for tests of hybrid search: the only part of askwpd a test may script.
package fakeembed

import (
	"hash/fnv"
	"math"
	"strings"
	"unicode"
)

// Dims is the length of every vector Vector returns.
const Dims = 64

// concepts are a few groups of words that mean the same thing, so "car oil
// servicing" is near "automobile lubricant maintenance" while keyword
// search (with no synonyms file) sees no word in common: the gap hybrid
// search exists to close.
var concepts = map[string]string{
	"car": "car", "cars": "car", "automobile": "car", "automobiles": "car", "vehicle": "car",
	"oil": "oil", "lubricant": "oil", "lubrication": "oil",
	"servicing": "service", "service": "service", "maintenance": "service", "upkeep": "service",
}

// Vector is a hashed bag of concepts in Dims dimensions, L2-normalized.
func Vector(text string) []float32 {
	v := make([]float32, Dims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) }) {
		if len(w) < 3 {
			continue
		}
		if c, ok := concepts[w]; ok {
			w = "concept:" + c
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%Dims]++
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n > 0 {
		for i := range v {
			v[i] /= float32(math.Sqrt(n))
		}
	}
	return v
}
