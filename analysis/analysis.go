// Package analysis turns text into index terms. This file is a
// transitional facade over store while the analyzer moves out of it.
package analysis

import "github.com/askwp/askwpd/store"

// Token is one analyzed word.
type Token = store.Token

// Analyze returns text's index terms in lang.
func Analyze(text, lang string) []string { return store.Analyze(text, lang) }

// AnalyzeTokens is Analyze keeping each token's surface form.
func AnalyzeTokens(text, lang string) []Token { return store.AnalyzeTokens(text, lang) }
