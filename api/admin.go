package api

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/askwp/askwpd/insights"
)

// Reindexer starts an index pass in the background. Reindex returns at
// once; an error wrapping ErrAlreadyRunning means a pass is running.
type Reindexer interface {
	Reindex(ctx context.Context) error
}

// ErrAlreadyRunning is wrapped by Reindex when a pass is already running.
var ErrAlreadyRunning = errors.New("an index pass is already running")

// The admin page is opened from a browser, which cannot send a bearer
// header on a plain GET. /admin?token=T checks T like the bearer token
// and exchanges it for a session cookie (HttpOnly, SameSite=Strict), then
// redirects so the token leaves the address bar. The session is signed
// with a key derived from the token, so rotating the token ends every
// session. The reindex form carries a CSRF token derived from the session.
const (
	adminCookie = "askwpd_admin"
	adminMaxAge = 12 * time.Hour
)

//go:embed admin.html
var adminHTML string

var adminTmpl = template.Must(template.New("admin").Funcs(template.FuncMap{
	"pct":   func(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + "%" },
	"ms":    func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) + " ms" },
	"bytes": humanBytes,
	"ago":   ago,
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
	"num": func(v any) string { return fmt.Sprint(v) },
	// stamp is a time to the second, for the cluster's lease and reads.
	"stamp": func(v any) string {
		t, ok := v.(time.Time)
		if p, isPtr := v.(*time.Time); isPtr && p != nil {
			t, ok = *p, true
		}
		if !ok || t.IsZero() {
			return "never"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"secs": func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) + " s" },
}).Parse(adminHTML))

func (s *Server) registerAdminRoutes(e *echo.Echo, g *echo.Group) {
	s.registerMetricsRoutes(g)
	getHead(e, "/admin", s.handleAdmin)
	e.POST("/admin/reindex", s.handleAdminReindex)
}

func (s *Server) sign(purpose, v string) string {
	m := hmac.New(sha256.New, s.tokenSH[:])
	m.Write([]byte(purpose + "\x00" + v))
	return hex.EncodeToString(m.Sum(nil))
}

// tokenOK compares a presented token with the configured one in constant
// time.
func (s *Server) tokenOK(tok string) bool {
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return tok != "" && subtle.ConstantTimeCompare(got[:], s.tokenSH[:]) == 1
}

// session returns the session id of a valid admin cookie, or "".
func (s *Server) session(c echo.Context) string {
	ck, err := c.Cookie(adminCookie)
	if err != nil {
		return ""
	}
	sid, mac, ok := strings.Cut(ck.Value, ".")
	if !ok || subtle.ConstantTimeCompare([]byte(mac), []byte(s.sign("session", sid))) != 1 {
		return ""
	}
	_, issued, _ := strings.Cut(sid, "-")
	t, err := strconv.ParseInt(issued, 10, 64)
	if err != nil || time.Since(time.Unix(t, 0)) > adminMaxAge {
		return ""
	}
	return sid
}

func (s *Server) bearerOK(c echo.Context) bool {
	tok, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
	return ok && s.tokenOK(tok)
}

func adminHeaders(c echo.Context) {
	h := c.Response().Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

func adminDenied(c echo.Context) error {
	return c.HTML(http.StatusUnauthorized, `<!doctype html><meta name="viewport" content="width=device-width,initial-scale=1">`+
		`<title>askwpd</title><p style="font:16px system-ui;margin:2em">Unauthorized. Open <code>/admin?token=…</code> with the token from the state dir (<code>cat /var/lib/askwpd/token</code>).</p>`)
}

func (s *Server) handleAdmin(c echo.Context) error {
	adminHeaders(c)
	if tok := c.QueryParam("token"); tok != "" {
		if !s.tokenOK(tok) {
			return adminDenied(c)
		}
		buf := make([]byte, 16)
		if _, err := rand.Read(buf); err != nil {
			return err
		}
		sid := hex.EncodeToString(buf) + "-" + strconv.FormatInt(time.Now().Unix(), 10)
		c.SetCookie(&http.Cookie{
			Name: adminCookie, Value: sid + "." + s.sign("session", sid), Path: "/admin",
			MaxAge: int(adminMaxAge.Seconds()), HttpOnly: true, Secure: c.IsTLS(), SameSite: http.SameSiteStrictMode,
		})
		return c.Redirect(http.StatusSeeOther, "/admin")
	}
	sid := s.session(c)
	if sid == "" && !s.bearerOK(c) {
		return adminDenied(c)
	}
	st, err := s.b.Status(c.Request().Context())
	if err != nil {
		return err
	}
	data := adminData{Status: s.withChat(st), Flash: c.QueryParam("reindex")}
	if sid != "" {
		data.CSRF = s.sign("csrf", sid)
	}
	_, data.CanReindex = s.b.(Reindexer)
	if o := st.Observability; o != nil {
		data.Obs = o
		data.LatencyChart = latencyChart(o.Latency)
		data.GrowthChart = growthChart(o.History)
		data.FreshChart = freshnessChart(o.FetchAges)
	}
	if in, ok := s.b.(Insighter); ok {
		r, err := in.Insights(c.Request().Context(), insights.ReportOptions{Days: 30, Limit: 10})
		if err != nil {
			return err
		}
		data.Insights, data.QuestionsChart = r, questionsChart(r.Daily)
	}
	var b bytes.Buffer
	if err := adminTmpl.Execute(&b, data); err != nil {
		return err
	}
	return c.HTMLBlob(http.StatusOK, b.Bytes())
}

// handleAdminReindex is the "reindex now" button. With a session cookie
// the form's CSRF token must match the session, and a browser's
// Sec-Fetch-Site must say same-origin; a bearer header needs neither,
// since no browser sends one on its own.
func (s *Server) handleAdminReindex(c echo.Context) error {
	adminHeaders(c)
	// Read the form first, so that a body over the cap is a 413 here as
	// on every route, not a missing CSRF token.
	if err := c.Request().ParseForm(); err != nil {
		return readFailed(err)
	}
	if !s.bearerOK(c) {
		sid := s.session(c)
		if sid == "" {
			return adminDenied(c)
		}
		if sfs := c.Request().Header.Get("Sec-Fetch-Site"); sfs != "" && sfs != "same-origin" {
			return c.String(http.StatusForbidden, "cross-site request refused")
		}
		if subtle.ConstantTimeCompare([]byte(c.FormValue("csrf")), []byte(s.sign("csrf", sid))) != 1 {
			return c.String(http.StatusForbidden, "bad or missing CSRF token; reload /admin")
		}
	}
	r, ok := s.b.(Reindexer)
	if !ok {
		return c.String(http.StatusNotImplemented, "reindexing is not available")
	}
	flash := "started"
	if err := r.Reindex(c.Request().Context()); err != nil {
		if !errors.Is(err, ErrAlreadyRunning) {
			return err
		}
		flash = "running"
	}
	return c.Redirect(http.StatusSeeOther, "/admin?reindex="+flash)
}

type adminData struct {
	*Status
	Obs          *Observability
	CSRF         string
	CanReindex   bool
	Flash        string
	LatencyChart template.HTML
	GrowthChart  template.HTML
	FreshChart   template.HTML
	// Insights is the question log's report; nil without one.
	Insights       *insights.Report
	QuestionsChart template.HTML
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func ago(secs int64) string {
	d := time.Duration(secs) * time.Second
	switch {
	case d < time.Minute:
		return strconv.FormatInt(secs, 10) + " s"
	case d < time.Hour:
		return strconv.FormatInt(int64(d/time.Minute), 10) + " min"
	case d < 48*time.Hour:
		return strconv.FormatFloat(d.Hours(), 'f', 1, 64) + " h"
	}
	return strconv.FormatFloat(d.Hours()/24, 'f', 1, 64) + " days"
}
