package wp

import "testing"

func TestNavigationLinks(t *testing.T) {
	content := `<!-- wp:navigation-submenu {"label":"About","type":"page","id":17,"url":"/about/","kind":"post-type"} -->` +
		`<!-- wp:navigation-link {"label":"Team","type":"page","id":18,"url":"/about/team/","kind":"post-type"} /-->` +
		`<!-- /wp:navigation-submenu -->` +
		`<!-- wp:navigation-link {"label":"Coffee","type":"category","id":2,"url":"/category/coffee/","kind":"taxonomy"} /-->` +
		`<!-- wp:navigation-link {"label":"Out","url":"https://example.com/","kind":"custom"} /-->` +
		`<!-- wp:core/navigation-link {"label":"Ext","id":"21","url":"/x/"} /-->`
	got := NavigationLinks(content)
	want := []MenuLink{
		{URL: "/about/", PostID: 17, Kind: "navigation", Object: "page"},
		{URL: "/about/team/", PostID: 18, Kind: "navigation", Object: "page"},
		{URL: "/category/coffee/", Kind: "navigation", Object: "category"},
		{URL: "https://example.com/", Kind: "navigation"},
		{URL: "/x/", PostID: 21, Kind: "navigation"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d links %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("link %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
