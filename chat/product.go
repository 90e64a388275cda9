package chat

import (
	"encoding/json"
	"fmt"

	"github.com/askwp/askwpd/extract"
)

// productAttrs are a first-pass result's language and product as
// attributes of its <result>: the model states a price or stock from
// these fields (rule 8), which come from the page's schema.org markup.
func productAttrs(lang string, p *extract.Product) string {
	s := ""
	if lang != "" {
		s += fmt.Sprintf(" lang=%q", lang)
	}
	if p != nil {
		if b, err := json.Marshal(p); err == nil {
			s += fmt.Sprintf(" product=%q", b)
		}
	}
	return s
}
