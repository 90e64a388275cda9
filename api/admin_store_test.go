package api

import (
	"strings"
	"testing"
	"time"

	"github.com/askwp/askwpd/store"
)

// The store section shows a heal: when, why, where the damaged file is
// kept and what was salvaged; none for a store that never healed.
func TestAdmin_Store(t *testing.T) {
	get := func(ss *StoreStatus) string { return authGet(t, &fakeBackend{store: ss}, "/admin") }
	at := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
	html := get(&StoreStatus{Healthy: true, Path: "/var/lib/askwpd/askwpd.db", LastHeal: &store.Heal{At: at, Cause: "corrupt",
		Damaged: "/var/lib/askwpd/askwpd.db.corrupt-20261202T160000Z", Salvaged: map[string]int{"questions": 41, "events": 2}}})
	for _, want := range []string{`id="store" data-healthy="true"`, `data-cause="corrupt"`, `found corrupt and a fresh one started`,
		`<code id="store_damaged">/var/lib/askwpd/askwpd.db.corrupt-20261202T160000Z</code>`, `2 events · 41 questions`} {
		if !strings.Contains(html, want) {
			t.Errorf("admin page lacks %s", want)
		}
	}
	if html := get(&StoreStatus{Healthy: false, Problem: "store: x was deleted while serving"}); !strings.Contains(html, `id="store_problem"`) {
		t.Error("admin page does not say the store is damaged")
	}
	if html := get(&StoreStatus{Healthy: true}); strings.Contains(html, `id="store"`) {
		t.Error("a store section for a store that never healed")
	}
}
