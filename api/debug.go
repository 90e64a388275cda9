package api

import (
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/labstack/echo/v4"
)

// registerDebugRoutes mounts Go's profiler under /debug/pprof/ when the
// operator turned it on ([debug] pprof = true): behind the bearer token
// and the Host check like every other route, and only for callers on the
// machine itself, even when the daemon listens beyond loopback. A profile
// shows code paths and timings, not content, but a CPU profile also costs
// the daemon while it runs, so it is nobody else's to start.
//
//	curl -H "Authorization: Bearer $(cat /var/lib/askwpd/token)" -o cpu.pprof \
//	    'http://127.0.0.1:8787/debug/pprof/profile?seconds=30'
//	go tool pprof /usr/bin/askwpd cpu.pprof
func (s *Server) registerDebugRoutes(g *echo.Group) {
	d := g.Group("/debug/pprof", localOnly)
	d.GET("/", echo.WrapHandler(http.HandlerFunc(pprof.Index)))
	d.GET("/cmdline", echo.WrapHandler(http.HandlerFunc(pprof.Cmdline)))
	d.GET("/profile", echo.WrapHandler(http.HandlerFunc(pprof.Profile)))
	d.GET("/symbol", echo.WrapHandler(http.HandlerFunc(pprof.Symbol)))
	d.POST("/symbol", echo.WrapHandler(http.HandlerFunc(pprof.Symbol)))
	d.GET("/trace", echo.WrapHandler(http.HandlerFunc(pprof.Trace)))
	// heap, allocs, goroutine, block, mutex, threadcreate
	d.GET("/:name", func(c echo.Context) error {
		pprof.Handler(c.Param("name")).ServeHTTP(c.Response(), c.Request())
		return nil
	})
}

// localOnly answers 404 to a request from another machine. A unix socket
// (no TCP peer) is local by construction.
func localOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if _, ok := c.Request().Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
			host, _, err := net.SplitHostPort(c.Request().RemoteAddr)
			if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
				return echo.ErrNotFound
			}
		}
		return next(c)
	}
}
