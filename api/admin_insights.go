package api

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/askwp/askwpd/insights"
)

// questionsChart draws the questions of each day as stacked bars:
// answered at the bottom, then the partial failures (thin, clarify,
// down-voted), then no match at the top, in the admin charts' style.
func questionsChart(days []insights.Day) template.HTML {
	total := func(d insights.Day) (ans, part, none int) {
		return d.ByStatus["answered"], d.ByStatus["thin"] + d.ByStatus["clarify"] + d.ByStatus["down_voted"], d.ByStatus["no_match"]
	}
	top := 0
	for _, d := range days {
		a, p, n := total(d)
		top = max(top, a+p+n)
	}
	if top == 0 {
		return emptyChart("questions per day", "no questions logged yet")
	}
	var b strings.Builder
	svgOpen(&b, "questions per day: answered, partly answered, not answered")
	axisLabel(&b, fmt.Sprint(top))
	w := float64(chartW-padL) / float64(len(days))
	scale := float64(chartH-padB-padT) / float64(top)
	for i, d := range days {
		a, p, n := total(d)
		x := float64(padL) + float64(i)*w + 0.5
		y := float64(chartH - padB)
		for _, seg := range []struct {
			n     int
			color string
			label string
		}{{a, "#2f7d4f", "answered"}, {p, "#b5762a", "partly answered"}, {n, "#b32d2e", "not answered"}} {
			if seg.n == 0 {
				continue
			}
			h := float64(seg.n) * scale
			y -= h
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %d %s</title></rect>`,
				x, y, max(w-1, 0.5), max(h, 0.5), seg.color, template.HTMLEscapeString(d.Date), seg.n, seg.label)
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="9" fill="#555">%s</text>`, padL, chartH-3, template.HTMLEscapeString(days[0].Date))
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="9" text-anchor="end" fill="#555">%s</text></svg>`, chartW, chartH-3,
		template.HTMLEscapeString(days[len(days)-1].Date))
	return template.HTML(b.String())
}
